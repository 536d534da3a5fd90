import { sql, type DatabasePoolConnection, type DatabasePool } from 'slonik';
import { z } from 'zod';

// Keeps legacy.market_snapshots (sql/0200_legacy_schema.sql) in step with the price history: one
// row per minute, dense ids, one `<code>_price` column per currency whose code is an identifier.
// Each run (the worker job refresh_legacy, every harvest cycle) first adds columns for new
// currencies, then recomputes ranges that backfills rewrote, then goes forward from the last row
// (which it redoes: writes of that minute may have landed since). Steps are bounded, so a first
// run over years of history catches up over several runs rather than in one long transaction.

const MINUTE_MS = 60_000;
/** Namespace of the job's transaction-level advisory lock (one refresh at a time). */
const LOCK_KEY = 0x1e9a;
/** Lower-cased codes that are identifiers, as the client's column list has them. */
const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

export interface LegacyRefreshOptions {
  /** Most minutes one step (one transaction) covers. */
  stepMinutes?: number;
  /** Stop taking new steps after this long (ms); the next run goes on. */
  budgetMs?: number;
  /** The present (tests); minutes before its minute are complete. */
  now?: Date;
}

export interface LegacyRefreshResult {
  /** Another refresh held the lock: nothing done. */
  skipped: boolean;
  columnsAdded: string[];
  steps: number;
  rowsWritten: number;
  /** Nothing left to do up to the last complete minute. */
  caughtUp: boolean;
}

/** Column of a currency in legacy.market_snapshots, or undefined when its code is no identifier. */
export function priceColumn(code: string): string | undefined {
  const lower = code.toLowerCase();
  return IDENTIFIER.test(lower) ? `${lower}_price` : undefined;
}

export async function refreshLegacy(
  pool: DatabasePool,
  options: LegacyRefreshOptions = {},
): Promise<LegacyRefreshResult> {
  const stepMinutes = options.stepMinutes ?? 1440;
  const budgetMs = options.budgetMs ?? 2000;
  const started = Date.now();
  const result: LegacyRefreshResult = {
    skipped: false,
    columnsAdded: [],
    steps: 0,
    rowsWritten: 0,
    caughtUp: false,
  };
  for (;;) {
    const step = await pool.transaction(async (tx) => {
      if (
        !(await tx.oneFirst(sql.type(z.object({ locked: z.boolean() }))`
        SELECT pg_try_advisory_xact_lock(${LOCK_KEY}, 0) AS locked
      `))
      ) {
        return undefined;
      }
      if (result.steps === 0) result.columnsAdded = await addMissingColumns(tx);
      return refreshStep(tx, stepMinutes, options.now ?? new Date());
    });
    if (!step) {
      result.skipped = true;
      return result;
    }
    result.steps++;
    result.rowsWritten += step.rows;
    if (step.done) {
      result.caughtUp = true;
      return result;
    }
    if (Date.now() - started >= budgetMs) return result;
  }
}

const codeRow = z.object({ code: z.string() });

/** The currencies that have (or get now) a column, in column order. */
async function columnCodes(tx: DatabasePoolConnection): Promise<string[]> {
  const existing = new Set(
    await tx.anyFirst(sql.type(z.object({ name: z.string() }))`
      SELECT attname AS name FROM pg_attribute
      WHERE attrelid = 'legacy.market_snapshots'::regclass AND attnum > 0 AND NOT attisdropped
    `),
  );
  const codes = await tx.anyFirst(sql.type(codeRow)`SELECT code FROM currencies ORDER BY code`);
  return codes.filter((code) => existing.has(priceColumn(code) ?? ''));
}

/**
 * Adds a column for every currency that lacks one. A currency with history already covered by
 * rows gets that range marked stale, so its new column is filled in.
 */
async function addMissingColumns(tx: DatabasePoolConnection): Promise<string[]> {
  const have = new Set(await columnCodes(tx));
  const codes = await tx.anyFirst(sql.type(codeRow)`SELECT code FROM currencies ORDER BY code`);
  const missing = codes.filter((code) => !have.has(code) && priceColumn(code));
  if (missing.length === 0) return [];
  await tx.query(sql.unsafe`
    ALTER TABLE legacy.market_snapshots ${sql.join(
      missing.map(
        (code) =>
          sql.fragment`ADD COLUMN IF NOT EXISTS ${sql.identifier([priceColumn(code)!])} numeric`,
      ),
      sql.fragment`, `,
    )}
  `);
  await tx.query(sql.unsafe`
    INSERT INTO legacy.stale_ranges (range_start, range_end)
    SELECT first_time, bounds.last_row
    FROM (SELECT max(last_updated) AS last_row FROM legacy.market_snapshots) bounds,
         LATERAL (
           SELECT min(o.time) AS first_time
           FROM unnest(${sql.array(missing, 'text')}) AS m(code),
                LATERAL (SELECT time FROM price_observations p
                         WHERE p.currency_code = m.code ORDER BY time LIMIT 1) o
         ) history
    WHERE bounds.last_row IS NOT NULL AND history.first_time <= bounds.last_row
  `);
  return missing.map((code) => priceColumn(code)!);
}

const staleRow = z.object({ id: z.number(), start: z.date(), end: z.date() });
const boundsRow = z.object({ first: z.date().nullable(), last: z.date().nullable() });

/** One bounded step: the oldest stale range, else forward from the last row. */
async function refreshStep(
  tx: DatabasePoolConnection,
  stepMinutes: number,
  now: Date,
): Promise<{ rows: number; done: boolean }> {
  const complete = floorMinute(now.getTime());
  const stepMs = stepMinutes * MINUTE_MS;
  const bounds = await tx.one(sql.type(boundsRow)`
    SELECT min(last_updated) AS first, max(last_updated) AS last FROM legacy.market_snapshots
  `);
  const stale = await tx.maybeOne(sql.type(staleRow)`
    SELECT id, range_start AS start, range_end AS "end" FROM legacy.stale_ranges
    ORDER BY id LIMIT 1
  `);
  if (stale) {
    const from = floorMinute(stale.start.getTime());
    // Rows must stay dense: a range before the first row extends to it.
    let until = floorMinute(stale.end.getTime()) + MINUTE_MS;
    if (bounds.first && from < bounds.first.getTime()) {
      until = Math.max(until, bounds.first.getTime());
    }
    until = Math.min(until, complete);
    const to = Math.min(from + stepMs, until);
    const rows = from < to ? await writeMinutes(tx, from, to) : 0;
    if (to >= until) {
      await tx.query(sql.unsafe`DELETE FROM legacy.stale_ranges WHERE id = ${stale.id}`);
    } else {
      await tx.query(sql.unsafe`
        UPDATE legacy.stale_ranges
        SET range_start = ${sql.timestamp(new Date(to))}, range_end = ${sql.timestamp(new Date(until - MINUTE_MS))}
        WHERE id = ${stale.id}
      `);
    }
    return { rows, done: false };
  }
  let from = bounds.last?.getTime();
  if (from === undefined) {
    const first = await tx.maybeOneFirst(sql.type(z.object({ first: z.date().nullable() }))`
      SELECT min(time) AS first FROM price_observations
    `);
    if (!first) return { rows: 0, done: true };
    from = floorMinute(first.getTime());
  }
  const to = Math.min(from + stepMs, complete);
  const rows = from < to ? await writeMinutes(tx, from, to) : 0;
  return { rows, done: to >= complete };
}

/** Upserts one row per minute of [from, to): the last price of each currency in that minute. */
async function writeMinutes(tx: DatabasePoolConnection, from: number, to: number): Promise<number> {
  const codes = await columnCodes(tx);
  const columns = codes.map((code) => sql.identifier([priceColumn(code)!]));
  const fromTs = sql.timestamp(new Date(from));
  const toTs = sql.timestamp(new Date(to));
  const pivot = codes.map(
    (code) => sql.fragment`max(p.price) FILTER (WHERE p.currency_code = ${code})`,
  );
  const result = await tx.query(sql.unsafe`
    WITH prices AS (
      SELECT time_bucket(INTERVAL '1 minute', time) AS minute, currency_code,
             last(close, time)::numeric AS price
      FROM price_observations
      WHERE time >= ${fromTs} AND time < ${toTs}
      GROUP BY 1, 2
    )
    INSERT INTO legacy.market_snapshots (id, last_updated${sql.join(
      columns.map((c) => sql.fragment`, ${c}`),
      sql.fragment``,
    )})
    SELECT (extract(epoch FROM g.minute) / 60)::bigint, g.minute${sql.join(
      pivot.map((p) => sql.fragment`, ${p}`),
      sql.fragment``,
    )}
    FROM generate_series(${fromTs}, ${toTs} - INTERVAL '1 minute', INTERVAL '1 minute') AS g(minute)
    LEFT JOIN prices p ON p.minute = g.minute
    GROUP BY g.minute
    ON CONFLICT (id) DO UPDATE SET last_updated = EXCLUDED.last_updated${sql.join(
      columns.map((c) => sql.fragment`, ${c} = EXCLUDED.${c}`),
      sql.fragment``,
    )}
  `);
  return result.rowCount;
}

function floorMinute(ms: number): number {
  return Math.floor(ms / MINUTE_MS) * MINUTE_MS;
}
