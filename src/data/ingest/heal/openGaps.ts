import type pg from 'pg';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';

// Which minutes are open gaps, for the heal job, `platform doctor` and the metric alike: the SQL
// function heal_open_minutes (sql/0240) holds the rule, and healWindow the window it applies to.
// Doctor counts them now; each heal pass records what it left open, which the metric sums.

const MINUTE = 60_000;

export interface HealWindow {
  startMs: number;
  endMs: number;
}

/** The look-back window ending at the last closed minute: the current one may still be observed. */
export function healWindow(now: number, lookbackHours: number): HealWindow {
  const endMs = Math.floor(now / MINUTE) * MINUTE - MINUTE;
  return { startMs: endMs - lookbackHours * 3_600_000, endMs };
}

/** The open minutes of one currency in the window, oldest first. */
export async function openMinutes(
  client: pg.ClientBase,
  code: string,
  window: HealWindow,
): Promise<number[]> {
  if (window.startMs >= window.endMs) return [];
  const { rows } = await client.query<{ minute: Date }>(
    `SELECT m AS minute
       FROM heal_open_minutes($1, to_timestamp($2::double precision / 1000),
                              to_timestamp($3::double precision / 1000)) AS m
      ORDER BY m`,
    [code, window.startMs, window.endMs],
  );
  return rows.map((r) => r.minute.getTime());
}

const openRow = z.object({ minutes: z.number(), currencies: z.number() });
export type OpenGapCount = z.infer<typeof openRow>;

/** Open minutes of every currency in the window, and how many currencies have any. */
export async function countOpenMinutes(
  db: CommonQueryMethods,
  window: HealWindow,
): Promise<OpenGapCount> {
  if (window.startMs >= window.endMs) return { minutes: 0, currencies: 0 };
  return db.one(sql.type(openRow)`
    SELECT count(*)::int AS minutes, count(DISTINCT c.code)::int AS currencies
      FROM currencies c
     CROSS JOIN LATERAL heal_open_minutes(
             c.code, to_timestamp(${window.startMs / 1000}), to_timestamp(${window.endMs / 1000})) AS m`);
}

const filledRow = z.object({ source: z.string(), minutes: z.number() });

/** Minutes healing has filled so far, by exchange. */
export async function healedMinutes(db: CommonQueryMethods) {
  return db.any(sql.type(filledRow)`
    SELECT source, filled_minutes::float8 AS minutes FROM heal_totals ORDER BY source`);
}

/** Adds minutes healing filled; called inside the transaction that loads them. */
export async function addHealedMinutes(client: pg.ClientBase, source: string, minutes: number) {
  if (minutes === 0) return;
  await client.query(
    `INSERT INTO heal_totals AS t (source, filled_minutes) VALUES ($1, $2)
     ON CONFLICT (source) DO UPDATE SET filled_minutes = t.filled_minutes + EXCLUDED.filled_minutes`,
    [source, minutes],
  );
}

/** What a heal pass left open in one currency (the metric's source); the count replaces the last. */
export async function recordOpenMinutes(client: pg.ClientBase, code: string, minutes: number) {
  await client.query(
    `INSERT INTO heal_open_gaps (currency_code, open_minutes, counted_at) VALUES ($1, $2, now())
     ON CONFLICT (currency_code) DO UPDATE
       SET open_minutes = EXCLUDED.open_minutes, counted_at = EXCLUDED.counted_at`,
    [code, minutes],
  );
}

const recordedRow = z.object({ minutes: z.number() });

/** The open minutes the last passes left, over every currency. */
export async function recordedOpenMinutes(db: CommonQueryMethods): Promise<number> {
  return db.oneFirst(sql.type(recordedRow)`
    SELECT coalesce(sum(open_minutes), 0)::float8 AS minutes FROM heal_open_gaps`);
}
