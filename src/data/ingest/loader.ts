import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { markTouchedRangesOnClient } from '../prices/invalidations.ts';
import type { TouchedRange } from '../prices/invalidations.ts';
import { candleProblem, latestAcceptedMicros } from './candleValidation.ts';
import { BinaryCopyEncoder, COPY_COLUMNS } from './copyEncoder.ts';
import { RangeTracker } from './rangeTracker.ts';
import { addIngestTotals } from './totals.ts';
import { lockUnit, recordedUnit, recordUnit, type RecordedUnit } from './unitStore.ts';
import {
  MAX_KEPT_REJECTIONS,
  type LoadPath,
  type Rejection,
  type RowSource,
  type UnitResult,
} from './types.ts';

// How a unit (a file, an exchange slice, a request body) gets into price_observations.
//
// Everything happens in ONE transaction: the rows, the touched-range marks for the rollups and the
// unit's completion record. A crash or kill at any point rolls all of it back, so no partial unit
// is ever visible and a rerun simply does the unit again; a completed unit is skipped.
//
// Two ways in:
// - direct: binary COPY straight into the hypertable, when the unit's rows cannot collide with
//   stored ones (the range it covers is empty, or unknown and assumed new). One pass, the speed of
//   psql's \copy. If a row does collide (unique violation), the transaction is rolled back and the
//   unit is redone through the merge path; the source is read again.
// - merge: binary COPY into a temporary staging table, then one
//   INSERT … SELECT … ON CONFLICT (currency_code, time) DO NOTHING.
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
  /** Opens a pass over the rows; called once more if a direct load has to be redone. */
  rows: RowSource;
  /** What the unit will write, when known before reading: checked for stored rows first. */
  expected?: Array<{ code: string; from: Date; to: Date }>;
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
}

const UNIQUE_VIOLATION = '23505';
const DEADLOCK = '40P01';
const MAX_ATTEMPTS = 4;

interface PassStats {
  read: number;
  copied: number;
  rejected: number;
  rejections: Rejection[];
  tracker: RangeTracker;
}

export async function loadUnit(
  client: pg.ClientBase,
  unit: UnitSpec,
  options: LoadOptions = {},
): Promise<UnitResult> {
  let path: LoadPath | null = null;
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
      path ??= (await overlapsStoredRows(client, unit.expected)) ? 'merge' : 'direct';
      const result = await loadOnce(client, unit, path, options, progress.report);
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
        path === 'direct' &&
        (code === UNIQUE_VIOLATION || code === DEADLOCK)
      ) {
        path = 'merge';
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
  path: LoadPath,
  options: LoadOptions,
  report: (rows: number, bytes: number) => void,
): Promise<UnitResult> {
  const target = path === 'direct' ? 'price_observations' : 'pg_temp.ingest_stage';
  if (path === 'merge') {
    await client.query(`
      CREATE TEMP TABLE IF NOT EXISTS ingest_stage (
        currency_code text, time timestamptz, open float8, high float8, low float8, close float8,
        volume float8, source text
      ) ON COMMIT DELETE ROWS`);
  }
  const stats = await copyPass(client, target, unit, options, report);
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
  let inserted = stats.copied;
  let ranges: TouchedRange[];
  if (path === 'merge') {
    const merged = await mergeStage(client);
    inserted = merged.inserted;
    ranges = merged.ranges;
  } else {
    ranges = stats.tracker.ranges();
  }
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

/** Streams the unit's valid rows into `target` with one binary COPY; counts and keeps rejections. */
async function copyPass(
  client: pg.ClientBase,
  target: string,
  unit: UnitSpec,
  options: LoadOptions,
  report: (rows: number, bytes: number) => void,
): Promise<PassStats> {
  const stats: PassStats = {
    read: 0,
    copied: 0,
    rejected: 0,
    rejections: [],
    tracker: new RangeTracker(),
  };
  const latest = latestAcceptedMicros(options.now);
  const keep = (r: Rejection) => {
    stats.rejected++;
    if (stats.rejections.length < MAX_KEPT_REJECTIONS) stats.rejections.push(r);
  };

  async function* encoded(): AsyncGenerator<Buffer> {
    const encoder = new BinaryCopyEncoder(unit.source);
    for await (const batch of unit.rows()) {
      for (const rejection of batch.rejections) keep(rejection);
      stats.read += batch.rejections.length + batch.candles.length;
      for (const candle of batch.candles) {
        const problem = candleProblem(candle, latest);
        if (problem !== null) {
          keep({ file: batch.file, line: candle.line, reason: problem });
          continue;
        }
        // Under --strict the first bad row dooms the unit: stop writing, keep reading to report.
        if (options.strict && stats.rejected > 0) continue;
        encoder.add(candle);
        stats.tracker.add(candle.code, candle.timeUs);
        stats.copied++;
        if (encoder.full) yield encoder.take();
      }
      report(batch.candles.length + batch.rejections.length, batch.bytes);
    }
    yield encoder.finish();
  }

  const copy = client.query(copyFrom(`COPY ${target} ${COPY_COLUMNS} FROM STDIN (FORMAT binary)`));
  await pipeline(Readable.from(encoded()), copy);
  // Parse and validation rejections of one batch were collected apart: report them in file order.
  stats.rejections.sort((a, b) => (a.file === b.file ? a.line - b.line : a.file < b.file ? -1 : 1));
  return stats;
}

/** Moves staged rows into the hypertable; existing rows win. Returns what was really inserted. */
async function mergeStage(
  client: pg.ClientBase,
): Promise<{ inserted: number; ranges: TouchedRange[] }> {
  const result = await client.query<{ code: string; from_us: string; to_us: string; n: string }>(`
    WITH inserted AS (
      INSERT INTO price_observations (currency_code, time, open, high, low, close, volume, source)
      SELECT currency_code, time, open, high, low, close, volume, source FROM pg_temp.ingest_stage
      ON CONFLICT (currency_code, time) DO NOTHING
      RETURNING currency_code, time
    )
    SELECT currency_code AS code,
           (extract(epoch FROM min(time)) * 1000000)::bigint AS from_us,
           (extract(epoch FROM max(time)) * 1000000)::bigint AS to_us,
           count(*) AS n
    FROM inserted
    GROUP BY currency_code, floor(extract(epoch FROM time) / 86400)`);
  const tracker = new RangeTracker();
  let inserted = 0;
  for (const row of result.rows) {
    tracker.add(row.code, Number(row.from_us), Number(row.to_us));
    inserted += Number(row.n);
  }
  return { inserted, ranges: tracker.ranges() };
}

/** One query: does any stored row fall in the ranges this unit is about to write? */
async function overlapsStoredRows(
  client: pg.ClientBase,
  expected: UnitSpec['expected'],
): Promise<boolean> {
  if (!expected || expected.length === 0) return false;
  const result = await client.query<{ overlaps: boolean }>(
    `SELECT EXISTS (
       SELECT 1 FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) AS r(code, t0, t1)
       WHERE EXISTS (SELECT 1 FROM price_observations p
                     WHERE p.currency_code = r.code AND p.time >= r.t0 AND p.time <= r.t1)
     ) AS overlaps`,
    [
      expected.map((e) => e.code),
      expected.map((e) => e.from.toISOString()),
      expected.map((e) => e.to.toISOString()),
    ],
  );
  return result.rows[0]?.overlaps ?? true;
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
