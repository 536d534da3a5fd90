import { CodeResolver } from './codes.ts';
import { knownCurrencyCodes, type Connect } from './connection.ts';
import { fileUnit, planFile, type FileUnitOptions, type PlannedFile } from './files.ts';
import { failedResult, loadUnit, type LoadOptions } from './loader.ts';
import { FileFormatError } from './readers/lineParsers.ts';
import type { UnitResult } from './types.ts';

export type FileImportOptions = LoadOptions & FileUnitOptions;

/**
 * Loads one file as one unit. Problems with the file itself (unreadable, unknown format or pair,
 * checksum mismatch) come back as a `failed` result; database errors are thrown.
 */
export async function importFile(
  connect: Connect,
  pathOrPlan: string | PlannedFile,
  options: FileImportOptions = {},
): Promise<UnitResult> {
  const label = typeof pathOrPlan === 'string' ? pathOrPlan : pathOrPlan.path;
  let plan: PlannedFile;
  try {
    plan = typeof pathOrPlan === 'string' ? await planFile(pathOrPlan) : pathOrPlan;
  } catch (error) {
    return failedResult(label, error);
  }
  const connection = await connect();
  let broken: Error | undefined;
  try {
    const codes = new CodeResolver(await knownCurrencyCodes(connection.client));
    const unit = await fileUnit(plan, codes, options);
    return await loadUnit(connection.client, unit, options);
  } catch (error) {
    if (isInputError(error)) return failedResult(plan.path, error);
    broken = error as Error;
    throw error;
  } finally {
    await connection.release(broken);
  }
}

/** Errors that say something about the input rather than about the database or the process. */
function isInputError(error: unknown): boolean {
  if (error instanceof FileFormatError) return true;
  // File-system errors: ENOENT, EACCES, EISDIR…
  const code = (error as { code?: string; syscall?: string }).code;
  return typeof code === 'string' && 'syscall' in (error as object) && !code.startsWith('ECONN');
}
