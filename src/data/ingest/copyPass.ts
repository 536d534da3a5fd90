import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { BinaryCopyEncoder, COPY_COLUMNS } from './copyEncoder.ts';
import { RangeTracker } from './rangeTracker.ts';
import { DEFAULT_MAX_STORED_KEYS, HeldRows, readStoredKeys, unmatchedRows } from './storedKeys.ts';
import type { StoredSpans } from './storedSpans.ts';
import type { Candle, ReadBatch } from './types.ts';
import { ValidRows, type ReadCounts, type ValidRowsOptions } from './validRows.ts';

// One read of a unit's rows, written by binary COPY in its transaction:
// - rows that cannot meet a stored row (StoredSpans) are streamed straight into
//   price_observations;
// - rows that might are held in memory a batch at a time (storedKeys.ts); when the batch is full
//   or the unit ends, the direct COPY is closed, the keys stored in the batch's window are read,
//   and the held rows matching none open the next direct COPY. Those matching a stored row are
//   the unit's duplicates: the stored row wins.
// - a batch whose window holds too many stored keys, and every held row of the redo after a
//   unique violation, go into a temporary staging table instead; mergeStage.ts moves them on.
// So a file that does not overlap stored rows costs one COPY, as psql's \copy does, and a file
// that does is read once: no attempt is wasted and nothing is read twice.

/** The merge's staging table; temporary (no WAL, private to the session), emptied at commit. */
export const STAGE_TABLE = 'pg_temp.ingest_merge_stage';

export interface PassStats extends ReadCounts {
  /** Valid rows: written, found stored, or staged. */
  copied: number;
  /** Of those, rows written straight into price_observations. */
  direct: number;
  /** Rows held to be matched against stored keys (possibly stored). */
  held: number;
  /** Of the held rows, those staged for the server's anti-join. */
  staged: number;
  /** Ranges of the rows written directly; mergeStage adds those of the staged rows it inserts. */
  directRanges: RangeTracker;
  /** Codes and time window of the staged rows: what mergeStage matches them against. */
  stageWindow: StageWindow | null;
}

export interface StageWindow {
  codes: Set<string>;
  fromUs: number;
  toUs: number;
}

/** How possibly stored rows are matched; the defaults suit production, tests make them small. */
export interface HeldRowsOptions {
  /** Rows held in memory before they are matched (DEFAULT_HELD_BATCH_ROWS). */
  batchRows?: number;
  /** Stored keys in a batch's window above which it is staged (DEFAULT_MAX_STORED_KEYS). */
  maxStoredKeys?: number;
}

export interface PassOptions extends ValidRowsOptions {
  held?: HeldRowsOptions;
  /** Stage every possibly stored row: the redo after a unique violation checks each insert. */
  stageAll?: boolean;
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
    held: 0,
    staged: 0,
    rejected: 0,
    rejections: [],
    directRanges: new RangeTracker(),
    stageWindow: null,
  };
  const pass = new Pass(client, source, spans, stats, options);
  const cursor = new ValidRows(rows, stats, options);
  // Rows matched as not stored, waiting for the next direct COPY.
  let ready: Candle[] = [];
  for (;;) {
    const next = await cursor.peek();
    if (ready.length > 0 || (next && spans.isCertainlyNew(next.code, next.timeUs))) {
      await copyInto(client, `price_observations ${COPY_COLUMNS}`, pass.directRows(ready, cursor));
      ready = [];
    } else if (next) {
      await pass.holdWhileUncertain(cursor);
    }
    const ended = (await cursor.peek()) === null;
    if (pass.held.full || (ended && pass.held.size > 0)) {
      ready = await pass.settleHeld();
    } else if (ended && ready.length === 0) {
      break;
    }
  }
  // Parse and validation rejections of one batch were collected apart: report them in file order.
  stats.rejections.sort((a, b) => (a.file === b.file ? a.line - b.line : a.file < b.file ? -1 : 1));
  return stats;
}

async function copyInto(client: pg.ClientBase, target: string, encoded: AsyncIterable<Buffer>) {
  const copy = client.query(copyFrom(`COPY ${target} FROM STDIN (FORMAT binary)`));
  await pipeline(Readable.from(encoded), copy);
}

class Pass {
  readonly held: HeldRows;
  private readonly client: pg.ClientBase;
  private readonly source: string;
  private readonly spans: StoredSpans;
  private readonly stats: PassStats;
  private readonly maxStoredKeys: number;
  private readonly stageAll: boolean;
  private stageCreated = false;

  constructor(
    client: pg.ClientBase,
    source: string,
    spans: StoredSpans,
    stats: PassStats,
    options: PassOptions,
  ) {
    this.client = client;
    this.source = source;
    this.spans = spans;
    this.stats = stats;
    this.held = new HeldRows(options.held?.batchRows);
    this.maxStoredKeys = options.held?.maxStoredKeys ?? DEFAULT_MAX_STORED_KEYS;
    this.stageAll = options.stageAll ?? false;
  }

  /**
   * One direct COPY's rows: the `ready` rows, then the unit's rows from the cursor, the certainly
   * new ones encoded and the others held, until the held batch is full or the unit ends.
   */
  async *directRows(ready: Candle[], cursor: ValidRows): AsyncGenerator<Buffer> {
    const encoder = new BinaryCopyEncoder(this.source);
    const stats = this.stats;
    for (const candle of ready) {
      encoder.add(candle);
      stats.directRanges.add(candle.code, candle.timeUs);
      stats.direct++;
      if (encoder.full) yield encoder.take();
    }
    while (!this.held.full) {
      // Most rows are at hand: wait only when a batch is used up.
      const candle = cursor.current() ?? (await cursor.fromNextBatch());
      if (!candle) break;
      cursor.advance();
      stats.copied++;
      if (!this.spans.isCertainlyNew(candle.code, candle.timeUs)) {
        this.hold(candle);
        continue;
      }
      encoder.add(candle);
      stats.directRanges.add(candle.code, candle.timeUs);
      stats.direct++;
      if (encoder.full) yield encoder.take();
    }
    yield encoder.finish();
  }

  /** Holds rows up to the next certainly new one (left in place), a full batch, or the end. */
  async holdWhileUncertain(cursor: ValidRows): Promise<void> {
    while (!this.held.full) {
      const candle = cursor.current() ?? (await cursor.fromNextBatch());
      if (!candle || this.spans.isCertainlyNew(candle.code, candle.timeUs)) return;
      cursor.advance();
      this.stats.copied++;
      this.hold(candle);
    }
  }

  private hold(candle: Candle): void {
    this.held.add(candle);
    this.stats.held++;
  }

  /** Matches the held batch against the stored keys; returns the rows to write directly. */
  async settleHeld(): Promise<Candle[]> {
    const windows = this.held.keyWindows();
    const rows = this.held.take();
    const stored = this.stageAll
      ? null
      : await readStoredKeys(this.client, windows, this.maxStoredKeys);
    if (stored) return unmatchedRows(rows, stored);
    await this.stage(rows);
    return [];
  }

  /** Copies rows into the staging table for mergeStage, widening its window. */
  private async stage(rows: Candle[]): Promise<void> {
    if (!this.stageCreated) {
      await this.client.query(`
        CREATE TEMP TABLE IF NOT EXISTS ingest_merge_stage (
          currency_code text, time timestamptz, open float8, high float8, low float8,
          close float8, volume float8, source text
        ) ON COMMIT DELETE ROWS`);
      this.stageCreated = true;
    }
    const stats = this.stats;
    const source = this.source;
    await copyInto(
      this.client,
      `${STAGE_TABLE} ${COPY_COLUMNS}`,
      (async function* () {
        const encoder = new BinaryCopyEncoder(source);
        for (const candle of rows) {
          encoder.add(candle);
          widen(stats, candle);
          if (encoder.full) yield encoder.take();
        }
        yield encoder.finish();
      })(),
    );
    stats.staged += rows.length;
  }
}

/** Extends the window of the staged rows to this one. */
function widen(stats: PassStats, candle: Candle): void {
  const window = stats.stageWindow;
  if (!window) {
    stats.stageWindow = {
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
