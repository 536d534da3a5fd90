import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import type yauzl from 'yauzl';
import type { CodeResolver } from './codes.ts';
import { readLineBatches } from './lines.ts';
import type { UnitSpec } from './loader.ts';
import {
  binanceKlineParser,
  FileFormatError,
  genericCsvParser,
  ndjsonParser,
  type LineParser,
} from './readers/lineParsers.ts';
import { parseBinanceFileName } from './symbols.ts';
import type { ReadBatch } from './types.ts';

export type FileFormat = 'binance-zip' | 'binance-csv' | 'csv' | 'ndjson';

const READ_CHUNK_BYTES = 65536;

/** The format a file is read as, from its name; null when it is none we read. */
export function detectFormat(path: string): FileFormat | null {
  const name = basename(path).toLowerCase();
  if (name.endsWith('.zip')) return 'binance-zip';
  if (name.endsWith('.csv')) return parseBinanceFileName(basename(path)) ? 'binance-csv' : 'csv';
  if (name.endsWith('.ndjson') || name.endsWith('.jsonl')) return 'ndjson';
  return null;
}

/**
 * The files named on the command line, directories walked recursively (files of known formats
 * only, hidden ones and .CHECKSUM files skipped), in a stable order; paths that do not exist are
 * returned apart so they can be reported.
 */
export async function expandInputs(
  inputs: string[],
): Promise<{ files: string[]; missing: string[] }> {
  const files: string[] = [];
  const missing: string[] = [];
  for (const input of inputs) {
    const info = await stat(input).catch(() => null);
    if (!info) missing.push(input);
    else if (info.isDirectory()) files.push(...(await walk(resolve(input))));
    else files.push(resolve(input));
  }
  return { files: [...new Set(files)], missing };
}

async function walk(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const out: string[] = [];
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue;
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await walk(full)));
    else if (entry.isFile() && detectFormat(full)) out.push(full);
  }
  return out;
}

export interface PlannedFile {
  path: string;
  format: FileFormat;
  /** Completion key: the same file unchanged (path, size, mtime) is loaded once. */
  key: string;
  size: number;
  /** Bytes the readers will report, for the progress bar (uncompressed size for zips). */
  progressBytes: number;
}

/** Stats a file and finds out how it will be read. Throws FileFormatError when it cannot be. */
export async function planFile(path: string): Promise<PlannedFile> {
  const format = detectFormat(path);
  if (!format) {
    throw new FileFormatError('unsupported file type (expected .zip, .csv, .ndjson or .jsonl)');
  }
  const real = await realpath(path);
  const info = await stat(real);
  let progressBytes = info.size;
  if (format === 'binance-zip') progressBytes = await zipCsvBytes(real);
  return {
    path: real,
    format,
    key: `file:${real}:${info.size}:${Math.trunc(info.mtimeMs)}`,
    size: info.size,
    progressBytes,
  };
}

async function zipCsvBytes(path: string): Promise<number> {
  const zip = await openZip(path);
  let total = 0;
  try {
    for await (const entry of zip.eachEntry()) {
      if (isCsvEntry(entry.fileName)) total += entry.uncompressedSize;
    }
  } finally {
    zip.close();
  }
  return total;
}

async function openZip(path: string) {
  try {
    return await (await zipLibrary()).openPromise(path, { lazyEntries: true, autoClose: false });
  } catch (error) {
    throw new FileFormatError(`not a readable zip file (${(error as Error).message})`);
  }
}

/** yauzl, loaded at the first zip: a load of CSV or NDJSON files does without it. */
const zipLibrary = async () => (await import('yauzl')).default;

const isCsvEntry = (name: string) => name.toLowerCase().endsWith('.csv') && !name.endsWith('/');

export interface FileUnitOptions {
  /** Code for generic files without a code column. */
  code?: string;
}

/** Describes how one planned file is loaded: its rows, expected range, hash and checksum check. */
export async function fileUnit(
  plan: PlannedFile,
  codes: CodeResolver,
  options: FileUnitOptions = {},
): Promise<UnitSpec> {
  const hash = { value: undefined as string | undefined };
  const base = { key: plan.key, kind: 'file' as const, label: plan.path };
  const expectedSum = await readChecksumFile(plan.path);
  const verify = () => {
    if (expectedSum && hash.value && expectedSum !== hash.value) {
      throw new FileFormatError(
        `content does not match ${basename(plan.path)}.CHECKSUM (sha256 ${hash.value}, expected ${expectedSum})`,
      );
    }
  };
  if (plan.format === 'binance-zip' || plan.format === 'binance-csv') {
    const name = parseBinanceFileName(basename(plan.path));
    const code = name ? binanceCode(name.symbol, codes) : undefined;
    if (plan.format === 'binance-csv' && !code) {
      throw new FileFormatError('cannot tell the currency from the file name');
    }
    const expected = name && code ? [{ code, from: name.from, to: name.to }] : undefined;
    if (plan.format === 'binance-zip') {
      hash.value = await sha256File(plan.path);
      verify();
      return {
        ...base,
        source: 'binance',
        rows: () => zipRows(plan, codes, code),
        ...(expected ? { expected } : {}),
        contentSha256: () => hash.value,
      };
    }
    return {
      ...base,
      source: 'binance',
      rows: () => textRows(plan.path, binanceKlineParser(plan.path, code as string), hash),
      ...(expected ? { expected } : {}),
      contentSha256: () => hash.value,
      verify,
    };
  }
  const makeParser =
    plan.format === 'csv'
      ? () => genericCsvParser(plan.path, codes, options.code)
      : () => ndjsonParser(plan.path, codes, options.code);
  return {
    ...base,
    source: plan.format,
    rows: () => textRows(plan.path, makeParser(), hash),
    contentSha256: () => hash.value,
    verify,
  };
}

function binanceCode(symbol: string, codes: CodeResolver): string {
  const resolved = codes.resolve(symbol);
  if (resolved.reason !== undefined) {
    throw new FileFormatError(`the file name's pair ${symbol}: ${resolved.reason}`);
  }
  return resolved.code;
}

/** A text file, streamed in large chunks and hashed on the way. */
async function* textRows(
  path: string,
  parse: LineParser,
  hash: { value: string | undefined },
): AsyncGenerator<ReadBatch> {
  const digest = createHash('sha256');
  const stream = createReadStream(path, { highWaterMark: READ_CHUNK_BYTES });
  for await (const lines of readLineBatches(stream, digest)) yield parse(lines);
  hash.value = digest.digest('hex');
}

/** Every CSV entry of a Binance zip, decompressed as a stream (never the whole file in memory). */
function zipRows(
  plan: PlannedFile,
  codes: CodeResolver,
  codeFromZipName: string | undefined,
): AsyncGenerator<ReadBatch> {
  return klineZipRows(
    () => openZip(plan.path),
    plan.path,
    (symbol) => codeFromZipName ?? (symbol ? binanceCode(symbol, codes) : undefined),
  );
}

/**
 * The rows of a Binance archive already in memory (a downloaded and checksum-verified one),
 * decompressed entry by entry as a stream: nothing is written to disk.
 */
export function klineZipBufferRows(
  bytes: Buffer,
  label: string,
  code: string,
): AsyncGenerator<ReadBatch> {
  return klineZipRows(
    async () => {
      try {
        return await (await zipLibrary()).fromBufferPromise(bytes, { lazyEntries: true });
      } catch (error) {
        throw new FileFormatError(`not a readable zip file (${(error as Error).message})`);
      }
    },
    label,
    () => code,
  );
}

/** `codeOf` gets the pair of a CSV entry's name (undefined when the name is not Binance's). */
async function* klineZipRows(
  open: () => Promise<yauzl.ZipFile>,
  label: string,
  codeOf: (entrySymbol: string | undefined) => string | undefined,
): AsyncGenerator<ReadBatch> {
  const zip = await open();
  try {
    const entries: yauzl.Entry[] = [];
    for await (const entry of zip.eachEntry()) if (isCsvEntry(entry.fileName)) entries.push(entry);
    if (entries.length === 0) throw new FileFormatError('the zip file holds no .csv entry');
    for (const entry of entries) {
      const code = codeOf(parseBinanceFileName(basename(entry.fileName))?.symbol);
      if (!code) throw new FileFormatError('cannot tell the currency from the file name');
      const entryLabel = entries.length === 1 ? label : `${label}!${entry.fileName}`;
      const parse = binanceKlineParser(entryLabel, code);
      const stream = await zip.openReadStreamPromise(entry);
      for await (const lines of readLineBatches(stream)) yield parse(lines);
    }
  } catch (error) {
    if (error instanceof FileFormatError) throw error;
    throw new FileFormatError(`the zip file is damaged (${(error as Error).message})`);
  } finally {
    zip.close();
  }
}

export async function sha256File(path: string): Promise<string> {
  const digest = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: READ_CHUNK_BYTES })) {
    digest.update(chunk as Buffer);
  }
  return digest.digest('hex');
}

/** Binance publishes `<file>.CHECKSUM` beside each archive: "<sha256>  <file name>". */
async function readChecksumFile(path: string): Promise<string | undefined> {
  const text = await readFile(`${path}.CHECKSUM`, 'utf8').catch(() => undefined);
  const match = text ? /^([0-9a-f]{64})\b/i.exec(text.trim()) : null;
  return match?.[1]?.toLowerCase();
}
