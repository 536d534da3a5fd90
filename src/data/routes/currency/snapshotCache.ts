import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { ChangeEvents } from '../../../shared/db/changeEvents.ts';
import { gauge } from '../../../shared/metrics.ts';
import { dayFields, type DayStatsCache } from '../../history/dayStats.ts';

// GET /data/currency/all answers every caller the same list, and the list changes once per
// harvest cycle: so it is read and JSON-encoded once per change, and requests are answered from
// the encoded bytes. "A change" is any write to the tables the list is made of, heard through
// their change notification (sql/0225_change_events.sql) on every instance; see SnapshotCache.

const displayRow = z.object({
  currencyName: z.string(),
  currencyCode: z.string(),
  value: z.number(),
  lastUpdated: z.date(),
  latest: z.date(),
});

/** The whole list, encoded: each item's JSON text, and the full answer's bytes. */
export interface EncodedSnapshot {
  /** Each currency's JSON text, in the answer's order (highest value first). */
  items: readonly string[];
  /** `{"currencies":[…every item…]}` as UTF-8: the answer without limit and offset. */
  whole: Buffer;
}

const snapshotAge = gauge(
  'data_snapshot_age_seconds',
  'Age of the encoded price snapshot the data module answers from (0 while it is not kept).',
  [],
);

/**
 * Reads the list as the route has always answered it (names, current values, 24-hour statistics
 * from the rollups), every currency, and encodes it. The keys and their order are the contract's.
 */
async function readEncodedSnapshot(
  pool: DatabasePool,
  dayStats: DayStatsCache,
  version: number,
): Promise<EncodedSnapshot> {
  const rows = await pool.any(sql.type(displayRow)`
    SELECT c.name AS "currencyName", c.code AS "currencyCode",
           s.price AS value, s.observed_at AS "lastUpdated",
           max(s.observed_at) OVER () AS latest
    FROM currency_snapshots s JOIN currencies c ON c.code = s.currency_code
    ORDER BY s.price DESC, c.code
  `);
  const stats = await dayStats.get(rows[0]?.latest.getTime() ?? 0, version);
  const items = rows.map(({ latest: _latest, ...row }) =>
    JSON.stringify({
      ...row,
      logoUrl: `/assets/cryptofont/${row.currencyCode.toLowerCase()}.svg`,
      lastUpdated: row.lastUpdated.toISOString(),
      ...dayFields(row.value, stats.get(row.currencyCode)),
    }),
  );
  return { items, whole: Buffer.from(`{"currencies":[${items.join(',')}]}`) };
}

interface Kept {
  encoded: EncodedSnapshot;
  generation: number;
  builtAt: number;
}

/**
 * The encoded list, kept per process while it is exact: built under the market topic's
 * generation (src/shared/db/changeEvents.ts), it is served only while that generation holds, so
 * the first request after a change heard waits for a new build (shared by all requests at once),
 * and a build made just before a change is never served after it. Past `maxAgeMs` without a
 * change (the 24-hour window slides) the kept list is served while a new one is built. Without a
 * listening connection nothing is kept: every request reads the database, as before.
 */
export class SnapshotCache {
  private kept: Kept | undefined;
  private inflight: { generation: number; promise: Promise<Kept> } | undefined;
  private lastServed = 0;
  private readonly pool: DatabasePool;
  private readonly dayStats: DayStatsCache;
  private readonly events: ChangeEvents | undefined;
  private readonly maxAgeMs: number;

  constructor(
    pool: DatabasePool,
    dayStats: DayStatsCache,
    events: ChangeEvents | undefined,
    maxAgeMs = 60_000,
  ) {
    this.pool = pool;
    this.dayStats = dayStats;
    this.events = events;
    this.maxAgeMs = maxAgeMs;
    snapshotAge.set(0);
    // Build ahead of demand after a change, while the list is being asked for; one such build
    // at a time (a backfill committing slice after slice must not start a build per commit).
    events?.watch((topic) => {
      if (topic !== 'market' || !events.isListening || this.inflight) return;
      if (Date.now() - this.lastServed < this.maxAgeMs) void this.build().catch(() => {});
    });
  }

  /**
   * The list as of now. `fresh`: first make sure every change committed before the call has
   * been heard (the API asks so after hearing a change itself).
   */
  async current(options: { fresh?: boolean } = {}): Promise<EncodedSnapshot> {
    const events = this.events;
    if (!events?.isListening) {
      this.kept = undefined;
      snapshotAge.set(0);
      return readEncodedSnapshot(this.pool, this.dayStats, events?.generation('market') ?? 0);
    }
    if (options.fresh) await events.sync();
    this.lastServed = Date.now();
    const kept = this.kept;
    if (kept && kept.generation === events.generation('market')) {
      if (Date.now() - kept.builtAt >= this.maxAgeMs) void this.build().catch(() => {});
      snapshotAge.set((Date.now() - kept.builtAt) / 1000);
      return kept.encoded;
    }
    const built = await this.build();
    snapshotAge.set((Date.now() - built.builtAt) / 1000);
    return built.encoded;
  }

  /** One build per generation at a time; kept only if no newer one was kept meanwhile. */
  private build(): Promise<Kept> {
    const events = this.events!;
    const generation = events.generation('market');
    if (this.inflight?.generation === generation) return this.inflight.promise;
    const builtAt = Date.now();
    const promise = readEncodedSnapshot(this.pool, this.dayStats, generation).then((encoded) => {
      const built = { encoded, generation, builtAt };
      if (!this.kept || this.kept.builtAt <= builtAt) {
        this.kept = built;
      }
      return built;
    });
    const entry = { generation, promise };
    this.inflight = entry;
    void promise
      .finally(() => {
        if (this.inflight === entry) this.inflight = undefined;
      })
      .catch(() => {});
    return promise;
  }
}
