import { candleProblem, latestAcceptedMicros } from './candleValidation.ts';
import { MAX_KEPT_REJECTIONS, type Candle, type ReadBatch, type Rejection } from './types.ts';

/** What reading a unit counts: rows read, rows rejected, and the first rejections kept. */
export interface ReadCounts {
  read: number;
  rejected: number;
  rejections: Rejection[];
}

export interface ValidRowsOptions {
  strict?: boolean;
  now?: number;
  report: (rows: number, bytes: number) => void;
}

/**
 * A unit's valid rows, one at a time, with a look at the next one before it is taken (where a
 * write switches from one way to another). Rejections are kept as they are met; under --strict
 * the first one stops the writing, but reading goes on to count and report them all.
 */
export class ValidRows {
  readonly counts: ReadCounts;
  private readonly batches: AsyncIterator<ReadBatch>;
  private readonly strict: boolean;
  private readonly latest: number;
  private readonly report: ValidRowsOptions['report'];
  private batch: ReadBatch | null = null;
  private index = 0;
  /** Index of the current batch's row already validated (and found valid). */
  private checked = -1;
  private ended = false;

  constructor(rows: AsyncIterable<ReadBatch>, counts: ReadCounts, options: ValidRowsOptions) {
    this.batches = rows[Symbol.asyncIterator]();
    this.counts = counts;
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
      } else if (!(this.strict && this.counts.rejected > 0)) {
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
      this.counts.read += batch.rejections.length + batch.candles.length;
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
    this.counts.rejected++;
    if (this.counts.rejections.length < MAX_KEPT_REJECTIONS) this.counts.rejections.push(rejection);
  }
}
