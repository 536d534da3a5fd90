import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { candleProblem, latestAcceptedMicros } from './candleValidation.ts';
import { BinaryCopyEncoder, COPY_COLUMNS, STAGE_COLUMNS } from './copyEncoder.ts';
import { RangeTracker } from './rangeTracker.ts';
import type { StoredSpans } from './storedSpans.ts';
import { MAX_KEPT_REJECTIONS, type Candle, type ReadBatch, type Rejection } from './types.ts';

// One read of a unit's rows, written with at most two binary COPYs in its transaction:
// - rows that cannot meet a stored row (StoredSpans) go straight into price_observations, as
//   long as every row so far could;
// - from the first row that might, the rest go into the staging table, each with a flag saying
//   whether it is certainly new; mergeStage.ts moves them on.
// So a file that does not overlap stored rows costs one COPY, as psql's \copy does, and a file
// that does is read once: no attempt is wasted and nothing is read twice.

/** The merge's staging table; temporary (no WAL, private to the session), emptied at commit. */
export const STAGE_TABLE = 'pg_temp.ingest_merge_stage';

export interface PassStats {
  read: number;
  /** Valid rows written (to the hypertable or the stage). */
  copied: number;
  /** Of those, rows written straight into price_observations. */
  direct: number;
  /** Rows staged as certainly new, and as possibly stored. */
  stagedCertain: number;
  stagedMaybe: number;
  rejected: number;
  rejections: Rejection[];
  /** Ranges of the certainly new rows; mergeStage reports those of the others it inserted. */
  certainRanges: RangeTracker;
  /** Codes and time window of the possibly stored rows: what mergeStage matches them against. */
  maybeWindow: MaybeWindow | null;
}

export interface MaybeWindow {
  codes: Set<string>;
  fromUs: number;
  toUs: number;
}

export interface PassOptions {
  strict?: boolean;
  now?: number;
  report: (rows: number, bytes: number) => void;
}

/** Streams a unit's valid rows into the database; counts and keeps rejections. */
export async function copyPass(
  client: pg.ClientBase,
  source: string,
  rows: AsyncIterable<ReadBatch>,
  spans: StoredSpans,
  options: PassOptions,
): Promise<PassStats> {
  const stats: PassStats = {
    read: 0,
    copied: 0,
    direct: 0,
    stagedCertain: 0,
    stagedMaybe: 0,
    rejected: 0,
    rejections: [],
    certainRanges: new RangeTracker(),
    maybeWindow: null,
  };
  const cursor = new ValidRows(rows, stats, options);
  const first = await cursor.peek();
  if (first && spans.isCertainlyNew(first.code, first.timeUs)) {
    await copyInto(client, `price_observations ${COPY_COLUMNS}`, directRows(cursor, source, spans));
  }
  if (await cursor.peek()) {
    await client.query(`
      CREATE TEMP TABLE IF NOT EXISTS ingest_merge_stage (
        currency_code text, time timestamptz, open float8, high float8, low float8, close float8,
        volume float8, source text, certain boolean
      ) ON COMMIT DELETE ROWS`);
    await copyInto(client, `${STAGE_TABLE} ${STAGE_COLUMNS}`, stagedRows(cursor, source, spans));
  }
  // Parse and validation rejections of one batch were collected apart: report them in file order.
  stats.rejections.sort((a, b) => (a.file === b.file ? a.line - b.line : a.file < b.file ? -1 : 1));
  return stats;
}

async function copyInto(client: pg.ClientBase, target: string, encoded: AsyncIterable<Buffer>) {
  const copy = client.query(copyFrom(`COPY ${target} FROM STDIN (FORMAT binary)`));
  await pipeline(Readable.from(encoded), copy);
}

/** Rows for the hypertable, up to (not including) the first one that might be stored. */
async function* directRows(
  cursor: ValidRows,
  source: string,
  spans: StoredSpans,
): AsyncGenerator<Buffer> {
  const encoder = new BinaryCopyEncoder(source);
  const stats = cursor.stats;
  for (;;) {
    // Most rows are at hand: wait only when a batch is used up.
    const candle = cursor.current() ?? (await cursor.fromNextBatch());
    if (!candle) break;
    if (!spans.isCertainlyNew(candle.code, candle.timeUs)) break;
    encoder.add(candle);
    stats.certainRanges.add(candle.code, candle.timeUs);
    stats.direct++;
    stats.copied++;
    cursor.advance();
    if (encoder.full) yield encoder.take();
  }
  yield encoder.finish();
}

/** Every remaining row, into the staging table, flagged certainly new or possibly stored. */
async function* stagedRows(
  cursor: ValidRows,
  source: string,
  spans: StoredSpans,
): AsyncGenerator<Buffer> {
  const encoder = new BinaryCopyEncoder(source, { staging: true });
  const stats = cursor.stats;
  for (;;) {
    // Most rows are at hand: wait only when a batch is used up.
    const candle = cursor.current() ?? (await cursor.fromNextBatch());
    if (!candle) break;
    const certain = spans.isCertainlyNew(candle.code, candle.timeUs);
    encoder.add(candle, certain);
    if (certain) {
      stats.certainRanges.add(candle.code, candle.timeUs);
      stats.stagedCertain++;
    } else {
      stats.stagedMaybe++;
      widen(stats, candle);
    }
    stats.copied++;
    cursor.advance();
    if (encoder.full) yield encoder.take();
  }
  yield encoder.finish();
}

/** Extends the window of the possibly stored rows to this one. */
function widen(stats: PassStats, candle: Candle): void {
  const window = stats.maybeWindow;
  if (!window) {
    stats.maybeWindow = {
      codes: new Set([candle.code]),
      fromUs: candle.timeUs,
      toUs: candle.timeUs,
    };
    return;
  }
  window.codes.add(candle.code);
  if (candle.timeUs < window.fromUs) window.fromUs = candle.timeUs;
  else if (candle.timeUs > window.toUs) window.toUs = candle.timeUs;
}

/**
 * The unit's valid rows, one at a time, with a look at the next one before it is taken (where
 * the direct COPY stops). Rejections are kept as they are met; under --strict the first one
 * stops the writing, but reading goes on to count and report them all.
 */
class ValidRows {
  readonly stats: PassStats;
  private readonly batches: AsyncIterator<ReadBatch>;
  private readonly strict: boolean;
  private readonly latest: number;
  private readonly report: PassOptions['report'];
  private batch: ReadBatch | null = null;
  private index = 0;
  /** Index of the current batch's row already validated (and found valid). */
  private checked = -1;
  private ended = false;

  constructor(rows: AsyncIterable<ReadBatch>, stats: PassStats, options: PassOptions) {
    this.batches = rows[Symbol.asyncIterator]();
    this.stats = stats;
    this.strict = options.strict ?? false;
    this.latest = latestAcceptedMicros(options.now);
    this.report = options.report;
  }

  /** The next valid row, left in place; null when the unit has no more. */
  async peek(): Promise<Candle | null> {
    return this.current() ?? this.fromNextBatch();
  }

  advance(): void {
    this.index++;
  }

  /** The current batch's next valid row, left in place; undefined when the batch has no more. */
  current(): Candle | undefined {
    const batch = this.batch;
    if (!batch) return undefined;
    while (this.index < batch.candles.length) {
      const candle = batch.candles[this.index] as Candle;
      if (this.checked === this.index) return candle;
      const problem = candleProblem(candle, this.latest);
      if (problem !== null) {
        this.keep({ file: batch.file, line: candle.line, reason: problem });
      } else if (!(this.strict && this.stats.rejected > 0)) {
        this.checked = this.index;
        return candle;
      }
      this.index++;
    }
    return undefined;
  }

  /** Reads batches up to the next valid row, left in place; null when the unit has no more. */
  async fromNextBatch(): Promise<Candle | null> {
    while (!this.ended) {
      const next = await this.batches.next();
      if (next.done) {
        this.ended = true;
        this.batch = null;
        break;
      }
      const batch = next.value;
      for (const rejection of batch.rejections) this.keep(rejection);
      this.stats.read += batch.rejections.length + batch.candles.length;
      this.report(batch.candles.length + batch.rejections.length, batch.bytes);
      this.batch = batch;
      this.index = 0;
      this.checked = -1;
      const candle = this.current();
      if (candle) return candle;
    }
    return null;
  }

  private keep(rejection: Rejection): void {
    this.stats.rejected++;
    if (this.stats.rejections.length < MAX_KEPT_REJECTIONS) this.stats.rejections.push(rejection);
  }
}
