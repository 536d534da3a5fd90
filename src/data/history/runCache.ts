import { counter, gauge } from '../../shared/metrics.ts';

// Formatted runs of settled history, kept between requests. An answer is made of runs of up to
// RUN_BUCKETS buckets cut on a grid fixed in time (see planRuns), so the runs of a year-long
// window ending now are the same from one request to the next but for its two ends. A run read
// only from materialised rollup rows is a function of those rows, which change only when a
// backfill is recomputed, and that moves the currency's revision (sql/0090_rollup_revisions.sql),
// which is part of the key. The same idea as the results cache of Grafana Mimir's or Thanos'
// query frontends: split by aligned steps, keep what is settled, recompute what is recent.

/** A run's JSON text (its items joined by commas) and whether none of its buckets holds data. */
export interface CachedRun {
  items: Buffer;
  empty: boolean;
}

const lookups = counter(
  'history_run_cache_lookups_total',
  'Settled runs of history answers looked up in the data module cache, by result (hit or miss).',
  ['result'],
);
const bytesGauge = gauge(
  'history_run_cache_bytes',
  'Bytes of formatted history runs held by the data module cache.',
  [],
);

/** What an entry holds: its text and its key (one byte a character: keys are ASCII). */
const sizeOf = (key: string, run: CachedRun) => key.length + run.items.length;

/** A least-recently-used map of formatted runs, bounded by the bytes of their keys and texts. */
export class RunCache {
  private readonly entries = new Map<string, CachedRun>();
  private bytes = 0;
  readonly maxBytes: number;
  /** Look-ups answered and not, since this cache was made. */
  hits = 0;
  misses = 0;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  get(key: string): CachedRun | undefined {
    const found = this.entries.get(key);
    lookups.inc({ result: found ? 'hit' : 'miss' });
    if (!found) {
      this.misses += 1;
      return undefined;
    }
    this.hits += 1;
    // Map iteration follows insertion, so re-inserting marks the entry as the newest.
    this.entries.delete(key);
    this.entries.set(key, found);
    return found;
  }

  set(key: string, run: CachedRun): void {
    if (sizeOf(key, run) > this.maxBytes) return;
    const previous = this.entries.get(key);
    if (previous) {
      this.entries.delete(key);
      this.bytes -= sizeOf(key, previous);
    }
    this.entries.set(key, run);
    this.bytes += sizeOf(key, run);
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= sizeOf(oldest, entry);
    }
    bytesGauge.set(this.bytes);
  }

  get size(): number {
    return this.entries.size;
  }

  get heldBytes(): number {
    return this.bytes;
  }
}
