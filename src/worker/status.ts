import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { Check } from '../shared/diagnostics.ts';
import { TICKER_APPLICATION_PREFIX, TICKER_LOCK_CLASS } from './ticker.ts';

const tickerRow = z.object({ name: z.string(), processes: z.number(), leaders: z.number() });
export type TickerStatus = z.infer<typeof tickerRow>;

/**
 * The tickers connected to this database, by name: how many processes run one and how many of
 * them hold its lead (1 when healthy). Read from pg_stat_activity and pg_locks, so it sees every
 * worker process, wherever it runs.
 */
export async function tickerStatus(db: CommonQueryMethods): Promise<TickerStatus[]> {
  const rows = await db.any(sql.type(tickerRow)`
    SELECT substr(a.application_name, ${TICKER_APPLICATION_PREFIX.length + 1}) AS name,
           count(*)::int AS processes,
           count(l.pid)::int AS leaders
    FROM pg_stat_activity a
    LEFT JOIN pg_locks l
      ON l.pid = a.pid AND l.locktype = 'advisory' AND l.granted
     AND l.classid = ${TICKER_LOCK_CLASS}::oid AND l.objsubid = 2
    WHERE a.datname = current_database()
      AND starts_with(a.application_name, ${TICKER_APPLICATION_PREFIX})
    GROUP BY 1 ORDER BY 1
  `);
  return [...rows];
}

/** `platform doctor`'s worker check: some worker runs the harvest ticker, and one leads it. */
export async function workerCheck(ctx: { pool: CommonQueryMethods }): Promise<Check[]> {
  const harvest = (await tickerStatus(ctx.pool)).find((t) => t.name === 'harvest_prices');
  const fix = 'start a worker: `platform start --role worker` (or `--role all`)';
  if (!harvest) {
    return [{ name: 'worker', ok: false, detail: 'no worker is connected to this database', fix }];
  }
  return [
    {
      name: 'worker',
      ok: harvest.leaders === 1,
      detail:
        `${harvest.processes} worker process(es); the harvest ticker has ` +
        `${harvest.leaders === 1 ? 'a leader' : `${harvest.leaders} leaders`}`,
      fix,
    },
  ];
}
