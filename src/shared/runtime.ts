import type pg from 'pg';
import type { Config } from './config.ts';
import { createDatabasePool, createPgPool, type DatabasePool } from './db/pool.ts';
import { createLogger, type Logger } from './logger.ts';

/** What every process role shares: configuration, one logger and the database pools. */
export interface Runtime {
  config: Config;
  logger: Logger;
  pool: DatabasePool;
  /** Expensive reads only (history, candles, export): they never hold `pool`'s connections. */
  readPool: DatabasePool;
  /** Raw node-postgres pool for COPY and LISTEN. */
  pgPool: pg.Pool;
  close(): Promise<void>;
}

export async function createRuntime(config: Config, logger?: Logger): Promise<Runtime> {
  const log = logger ?? createLogger(config.LOG_LEVEL);
  const pool = await createDatabasePool(config.DATABASE_URL, {
    maxPoolSize: config.DATABASE_POOL_SIZE,
    statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
    connectionTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_MS,
  });
  const readPool = await createDatabasePool(config.DATABASE_URL, {
    maxPoolSize: config.DATABASE_READ_POOL_SIZE,
    statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
    connectionTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_MS,
  });
  const pgPool = createPgPool(config.DATABASE_URL, 4, config.DATABASE_CONNECT_TIMEOUT_MS);
  let closed = false;
  return {
    config,
    logger: log,
    pool,
    readPool,
    pgPool,
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled([pool.end(), readPool.end(), pgPool.end()]);
    },
  };
}
