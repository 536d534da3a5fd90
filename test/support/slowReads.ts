import type pg from 'pg';
import { sql, type DatabasePool } from 'slonik';

// Real slow reads for tests of cancellation and admission control: a test transaction holds an
// exclusive lock on the raw price table, so every history read waits in the database (active in
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

/** Holds an exclusive lock on the raw price table until released. */
export async function lockPrices(pgPool: pg.Pool) {
  const client = await pgPool.connect();
  await client.query('BEGIN');
  await client.query('LOCK TABLE price_observations IN ACCESS EXCLUSIVE MODE');
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return {
    pid: rows[0]!.pid,
    async release() {
      await client.query('ROLLBACK');
      client.release();
    },
  };
}
