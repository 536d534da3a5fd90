import { request } from 'node:http';
import type pg from 'pg';
import { sql, type DatabasePool } from 'slonik';
import { until } from './wait.ts';

// Real slow reads for tests of cancellation and admission control: a test transaction holds an
// exclusive lock on a table a read needs, so the read waits in the database (active in
// pg_stat_activity, as a long scan would be) until it is cancelled or the lock goes.

/** Queries running in this test's database, other than ours and the lock holder's. */
export async function runningQueries(pool: DatabasePool, except: number): Promise<number> {
  return Number(
    await pool.oneFirst(sql.unsafe`
      SELECT count(*) FROM pg_stat_activity
      WHERE datname = current_database() AND state = 'active'
        AND pid <> pg_backend_pid() AND pid <> ${except}
        AND query NOT ILIKE '%pg_stat_activity%'`),
  );
}

/** Statements of this test's database waiting on a lock (a read held up by lockTable). */
export async function queriesWaitingOnLocks(pool: DatabasePool): Promise<number> {
  return Number(
    await pool.oneFirst(sql.unsafe`
      SELECT count(*) FROM pg_stat_activity
      WHERE datname = current_database() AND state = 'active' AND wait_event_type = 'Lock'`),
  );
}

/** Holds an exclusive lock on `table` until released. */
export async function lockTable(pgPool: pg.Pool, table: string) {
  const client = await pgPool.connect();
  await client.query('BEGIN');
  await client.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return {
    pid: rows[0]!.pid,
    async release() {
      await client.query('ROLLBACK');
      client.release();
    },
  };
}

/** Holds an exclusive lock on the raw price table until released. */
export function lockPrices(pgPool: pg.Pool) {
  return lockTable(pgPool, 'price_observations');
}

/** Starts a GET and returns a function that drops the connection (the client leaving). */
export function startRequest(url: string, headers: Record<string, string> = {}) {
  const req = request(url, { headers });
  req.on('error', () => {});
  req.end();
  return () => req.destroy();
}

export interface AbandonedRead {
  pool: DatabasePool;
  pgPool: pg.Pool;
  url: string;
  headers?: Record<string, string>;
  /** The table the read waits on (default: the raw prices). */
  table?: string;
  /**
   * How long the read's SQL may run on after the client left: the rule's 2 s, plus slack for a
   * loaded machine.
   */
  stopsWithinMs?: number;
}

/**
 * Starts a read that waits in the database, leaves once it does, and waits until nothing of it
 * runs any more: a read whose SQL is not cancelled waits on the lock until the ceiling fails it.
 */
export async function expectAbandonedSqlStops(read: AbandonedRead) {
  const lock = await lockTable(read.pgPool, read.table ?? 'price_observations');
  try {
    const leave = startRequest(read.url, read.headers);
    await until(
      async () => (await queriesWaitingOnLocks(read.pool)) > 0,
      60_000,
      'the slow query to wait on the lock',
    );
    leave();
    await until(
      async () => (await runningQueries(read.pool, lock.pid)) === 0,
      read.stopsWithinMs ?? 2_000 + 3_000,
      'the abandoned query to stop',
    );
  } finally {
    await lock.release();
  }
}
