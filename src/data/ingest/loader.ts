import type pg from 'pg';
import { markTouchedRangesOnClient } from '../prices/invalidations.ts';
import { copyPass, type HeldRowsOptions, type PassStats } from './copyPass.ts';
import { mergeStage } from './mergeStage.ts';
import { StoredSpans, type ExpectedRange } from './storedSpans.ts';
import { addIngestTotals } from './totals.ts';
import { lockUnit, recordedUnit, recordUnit, type RecordedUnit } from './unitStore.ts';
import type { LoadPath, RowSource, UnitResult } from './types.ts';

// How a unit (a file, an exchange slice, a request body) gets into price_observations.
//
// Everything happens in ONE transaction: the rows, the touched-range marks for the rollups and the
// unit's completion record. A crash or kill at any point rolls all of it back, so no partial unit
// is ever visible and a rerun simply does the unit again; a completed unit is skipped.
//
// The rows are read once (copyPass.ts). Before the first, one look per currency at the stored
// rows (storedSpans.ts) tells which rows cannot collide with them:
// - those are streamed by binary COPY straight into the hypertable: one pass at the speed of
//   psql's \copy (path `direct` when all rows go so);
// - the others are held in memory a batch at a time and matched against the keys stored in
//   their window (storedKeys.ts); the unmatched go in by the next direct COPY, the matched are
//   duplicates (path `merge`). A batch whose window holds too many stored keys is staged and
//   anti-joined on the server instead (mergeStage.ts).
// A unique violation (a row stored meanwhile by another writer, or repeated within the unit)
// rolls the transaction back and the unit is redone with every row staged and checked by
// INSERT … ON CONFLICT (currency_code, time) DO NOTHING; the source is read again.
//
// Conflict rule: the row already stored wins. Loading the same data twice adds nothing and never
// rewrites history that rollups and clients have already seen; a correction is a delete of the
// range followed by a load.

export interface UnitSpec {
  /** Completion record key; null for units that are not recorded (HTTP bulk requests). */
  key: string | null;
  kind: 'file' | 'exchange' | 'simulated';
  label: string;
  /** The `source` column of the rows, and the metrics label. */
  source: string;
  /** Opens a pass over the rows; called once more if a load has to be redone. */
  rows: RowSource;
  /**
   * What the unit will write, when known before reading: only these codes and windows are looked
   * at for stored rows (otherwise every listed currency, over all time).
   */
  expected?: ExpectedRange[];
  /** The content hash, known once a pass has read everything. */
  contentSha256?: () => string | undefined;
  /** Called inside the transaction after the rows are written: a last veto (checksum mismatch). */
  verify?: () => void;
  /** Called inside the transaction with what was written, to count it with it (gap healing). */
  afterWrite?: (client: pg.ClientBase, result: UnitResult) => Promise<void>;
}

export interface LoadOptions {
  /** Any rejected row rejects the whole unit: nothing of it is written. */
  strict?: boolean;
  /** Load a completed unit again (its rows count as duplicates unless they were deleted). */
  force?: boolean;
  /** Progress deltas in rows and input bytes; negative when an attempt is redone. */
  onProgress?: (rows: number, bytes: number) => void;
  now?: number;
  /** Batch size and staging threshold of the possibly stored rows (tests make them small). */
  held?: HeldRowsOptions;
}

const UNIQUE_VIOLATION = '23505';
const DEADLOCK = '40P01';
const MAX_ATTEMPTS = 4;

export async function loadUnit(
  client: pg.ClientBase,
  unit: UnitSpec,
  options: LoadOptions = {},
): Promise<UnitResult> {
  // After a unique violation (a row another writer stored since the look at the stored spans,
  // or a row repeated within the unit) the unit is redone with every row checked.
  let checkEveryRow = false;
  for (let attempt = 1; ; attempt++) {
    const progress = progressTap(options.onProgress);
    await client.query('BEGIN');
    try {
      let recorded: RecordedUnit | null = null;
      if (unit.key) {
        await lockUnit(client, unit.key);
        recorded = await recordedUnit(client, unit.key);
        if (!options.force && recorded && satisfies(recorded, options)) {
          await client.query('COMMIT');
          return emptyResult(unit.label, 'skipped');
        }
      }
      const spans = checkEveryRow
        ? StoredSpans.unknown()
        : await StoredSpans.read(client, unit.expected);
      const result = await loadOnce(client, unit, spans, checkEveryRow, options, progress.report);
      await client.query(result.status === 'loaded' ? 'COMMIT' : 'ROLLBACK');
      // A loaded unit's counts committed with it (loadOnce); a rejected one's refused rows
      // count too, though nothing of it was written.
      if (result.status === 'rejected') await addIngestTotals(client, unit.source, result);
      if (result.status === 'rejected' && recorded) {
        result.error = `${result.error ?? 'rejected'}; the rows an earlier load of it stored stay`;
      }
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      progress.rewind();
      const code = (error as { code?: string }).code;
      if (
        attempt < MAX_ATTEMPTS &&
        !checkEveryRow &&
        (code === UNIQUE_VIOLATION || code === DEADLOCK)
      ) {
        checkEveryRow = true;
        continue;
      }
      if (attempt < MAX_ATTEMPTS && code === DEADLOCK) continue;
      throw error;
    }
  }
}

async function loadOnce(
  client: pg.ClientBase,
  unit: UnitSpec,
  spans: StoredSpans,
  checkEveryRow: boolean,
  options: LoadOptions,
  report: (rows: number, bytes: number) => void,
): Promise<UnitResult> {
  const stats = await copyPass(client, unit.source, unit.rows(), spans, {
    report,
    stageAll: checkEveryRow,
    ...(options.strict !== undefined ? { strict: options.strict } : {}),
    ...(options.now !== undefined ? { now: options.now } : {}),
    ...(options.held !== undefined ? { held: options.held } : {}),
  });
  const path: LoadPath = stats.held > 0 ? 'merge' : 'direct';
  const refusal = refusalOf(stats, options);
  if (refusal) {
    return {
      ...emptyResult(unit.label, 'rejected'),
      read: stats.read,
      rejected: stats.rejected,
      rejections: stats.rejections,
      path,
      error: refusal,
    };
  }
  unit.verify?.();
  const inserted =
    stats.direct + (await mergeStage(client, stats, { checkEachInsert: checkEveryRow }));
  const ranges = stats.directRanges.ranges();
  await markTouchedRangesOnClient(client, ranges);
  const result: UnitResult = {
    label: unit.label,
    status: 'loaded',
    read: stats.read,
    inserted,
    duplicates: stats.copied - inserted,
    rejected: stats.rejected,
    rejections: stats.rejections,
    path,
  };
  if (unit.key) {
    await recordUnit(client, {
      key: unit.key,
      kind: unit.kind,
      source: unit.source,
      label: unit.label,
      contentSha256: unit.contentSha256?.(),
      read: result.read,
      inserted: result.inserted,
      duplicates: result.duplicates,
      rejected: result.rejected,
      rejections: result.rejections,
      path,
    });
  }
  await unit.afterWrite?.(client, result);
  await addIngestTotals(client, unit.source, result);
  return result;
}

/**
 * Why the unit is refused whole, if it is: under --strict any rejected row refuses it; without,
 * a unit whose every row was rejected has nothing to load, and recording it as loaded would both
 * report a load that did not happen and skip the unit on every later run.
 */
function refusalOf(stats: PassStats, options: LoadOptions): string | null {
  if (stats.rejected === 0) return null;
  if (options.strict) return `${stats.rejected} rejected row(s); --strict rejects the whole file`;
  if (stats.rejected === stats.read) return `all ${stats.rejected} row(s) rejected; nothing loaded`;
  return null;
}

/**
 * Whether a recorded load is all this run asks for. A --strict run asks that no row was rejected:
 * a unit an earlier run without --strict loaded with rejected rows is read again and refused.
 */
function satisfies(recorded: RecordedUnit, options: LoadOptions): boolean {
  return !options.strict || recorded.rejected === 0;
}

/** Wraps a progress callback so an attempt that is redone can take back what it reported. */
function progressTap(onProgress?: (rows: number, bytes: number) => void) {
  let rows = 0;
  let bytes = 0;
  return {
    report: (r: number, b: number) => {
      rows += r;
      bytes += b;
      onProgress?.(r, b);
    },
    rewind: () => {
      if (rows || bytes) onProgress?.(-rows, -bytes);
      rows = 0;
      bytes = 0;
    },
  };
}

export function emptyResult(label: string, status: UnitResult['status']): UnitResult {
  return { label, status, read: 0, inserted: 0, duplicates: 0, rejected: 0, rejections: [] };
}

/** A unit that loaded nothing because of `error` (an Error's message, or the reason itself). */
export function failedResult(label: string, error: unknown): UnitResult {
  return {
    ...emptyResult(label, 'failed'),
    error: error instanceof Error ? error.message : String(error),
  };
}
