import type pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { PG_EPOCH_US, TWO_32 } from './copyEncoder.ts';
import { microsToIso } from './timeParsing.ts';
import type { Candle } from './types.ts';

// Rows of a load that might meet stored ones (inside a currency's stored span, storedSpans.ts)
// are held in memory a batch at a time and matched here against the keys actually stored in
// their window, read by one primary-key range scan per currency. The held rows matching none go
// into the hypertable by the loader's next direct COPY, so a file overlapping stored rows costs
// reads of stored keys (14 bytes each in binary COPY) instead of staging every row and
// anti-joining it on the server, which on two cores shared with the loader's own parsing was
// slower than the DBA's `\copy` + `INSERT … ON CONFLICT DO NOTHING`.

/** Rows held before they are matched: bounds the loader's memory (a candle is ~100 bytes). */
export const DEFAULT_HELD_BATCH_ROWS = 100_000;
/**
 * Stored keys in one batch's window above which the batch goes through the staging table and
 * the server's anti-join instead (a sparse file over dense history): bounds the keys read and
 * kept per batch, and reading many more keys than rows held would cost more than the anti-join.
 */
export const DEFAULT_MAX_STORED_KEYS = 400_000;

/** A currency's window of held rows, µs since the epoch, inclusive. */
export interface KeyWindow {
  code: string;
  fromUs: number;
  toUs: number;
}

/** Rows held for matching, with the window of each currency among them. */
export class HeldRows {
  readonly capacity: number;
  rows: Candle[] = [];
  private windows = new Map<string, KeyWindow>();

  constructor(capacity = DEFAULT_HELD_BATCH_ROWS) {
    if (!(capacity >= 1)) throw new Error(`held batch size must be at least 1, got ${capacity}`);
    this.capacity = capacity;
  }

  get full(): boolean {
    return this.rows.length >= this.capacity;
  }

  get size(): number {
    return this.rows.length;
  }

  add(candle: Candle): void {
    this.rows.push(candle);
    const window = this.windows.get(candle.code);
    if (!window) {
      this.windows.set(candle.code, {
        code: candle.code,
        fromUs: candle.timeUs,
        toUs: candle.timeUs,
      });
    } else if (candle.timeUs < window.fromUs) window.fromUs = candle.timeUs;
    else if (candle.timeUs > window.toUs) window.toUs = candle.timeUs;
  }

  keyWindows(): KeyWindow[] {
    return [...this.windows.values()];
  }

  /** Hands the held rows over and starts an empty batch. */
  take(): Candle[] {
    const rows = this.rows;
    this.rows = [];
    this.windows = new Map();
    return rows;
  }
}

/** The rows no stored key matches (stored: per code, the stored times in µs). */
export function unmatchedRows(rows: Candle[], stored: Map<string, Set<number>>): Candle[] {
  return rows.filter((candle) => !stored.get(candle.code)?.has(candle.timeUs));
}

/**
 * The stored times of each window's currency inside it, one index range scan per currency on
 * the primary key (currency_code, time), returned in binary COPY form; null as soon as more than
 * `limit` keys are stored in the windows together (each scan reads at most what is left of it).
 * The bounds are literals, not parameters (COPY takes none), so chunk exclusion prunes by them;
 * codes come quoted by the client's escaping.
 */
export async function readStoredKeys(
  client: pg.ClientBase,
  windows: KeyWindow[],
  limit: number,
): Promise<Map<string, Set<number>> | null> {
  const keys = new Map<string, Set<number>>();
  let left = limit;
  for (const window of windows) {
    const times = new Set<number>();
    const stream = client.query(
      copyTo(`COPY (
        SELECT time FROM price_observations
        WHERE currency_code = ${client.escapeLiteral(window.code)}
          AND time >= '${microsToIso(window.fromUs)}' AND time <= '${microsToIso(window.toUs)}'
        LIMIT ${left + 1}) TO STDOUT (FORMAT binary)`),
    );
    const decoder = new TimeColumnDecoder(times);
    for await (const chunk of stream) decoder.push(chunk as Buffer);
    decoder.end();
    left -= times.size;
    if (left < 0) return null;
    keys.set(window.code, times);
  }
  return keys;
}

/** Header of binary COPY output: signature (11), flags (4), extension length (4, always 0). */
const HEADER_BYTES = 19;
/** One row of a single timestamptz column: field count (2), length (4), µs since 2000 (8). */
const ROW_BYTES = 14;

/** Decodes binary COPY output of one timestamptz column into µs since the Unix epoch. */
class TimeColumnDecoder {
  private readonly into: Set<number>;
  private pending: Buffer | null = null;
  private headerLeft = HEADER_BYTES;
  private ended = false;

  constructor(into: Set<number>) {
    this.into = into;
  }

  push(chunk: Buffer): void {
    const buffer = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    let o = Math.min(this.headerLeft, buffer.length);
    this.headerLeft -= o;
    while (!this.ended && buffer.length - o >= 2) {
      const fields = buffer.readInt16BE(o);
      if (fields === -1) {
        this.ended = true;
        o += 2;
        break;
      }
      if (buffer.length - o < ROW_BYTES) break;
      if (fields !== 1 || buffer.readInt32BE(o + 2) !== 8) {
        throw new Error('unexpected row in the binary COPY of stored times');
      }
      const high = buffer.readInt32BE(o + 6);
      this.into.add(high * TWO_32 + buffer.readUInt32BE(o + 10) + PG_EPOCH_US);
      o += ROW_BYTES;
    }
    this.pending = o < buffer.length ? buffer.subarray(o) : null;
  }

  end(): void {
    if (!this.ended || this.pending) throw new Error('binary COPY of stored times ended early');
  }
}
