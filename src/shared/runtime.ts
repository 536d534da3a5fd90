import type pg from 'pg';
import type { Config } from './config.ts';
import { ChangeEvents } from './db/changeEvents.ts';
import { createDatabasePool, createPgPool, type DatabasePool } from './db/pool.ts';
import { createLogger, type Logger } from './logger.ts';

/** application_name of the change-notification connection (what `pg_stat_activity` shows). */
export const CHANGE_EVENTS_APPLICATION_NAME = 'platform:change-events';

/** What every process role shares: configuration, one logger and the database pools. */
export interface Runtime {
  config: Config;
  logger: Logger;
  pool: DatabasePool;
  /** Expensive reads only (history, candles, export): they never hold `pool`'s connections. */
  readPool: DatabasePool;
  /** Raw node-postgres pool for COPY and LISTEN. */
  pgPool: pg.Pool;
  /**
   * The process's one LISTEN connection for change notifications (src/shared/db/changeEvents.ts),
   * opened on first use by whatever keeps database state in memory. None in a runtime without a
   * database (the one that only builds the OpenAPI documents): nothing is kept in memory then.
   */
  changeEvents(): ChangeEvents | undefined;
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
  let changes: ChangeEvents | undefined;
  return {
    config,
    logger: log,
    pool,
    readPool,
    pgPool,
    changeEvents() {
      if (closed) throw new Error('the runtime is closed');
      changes ??= new ChangeEvents(config.DATABASE_URL, log, CHANGE_EVENTS_APPLICATION_NAME);
      return changes;
    },
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled([pool.end(), readPool.end(), pgPool.end(), changes?.close()]);
    },
  };
}
