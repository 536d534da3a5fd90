import type pg from 'pg';
import type { Config } from './config.ts';
import { ChangeEvents } from './db/changeEvents.ts';
import { createDatabasePool, createPgPool, type DatabasePool } from './db/pool.ts';
import { ReadRouter, type ServerPools } from './db/readRouter.ts';
import { ReplicaMonitor, replicaName } from './db/replicaMonitor.ts';
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
  /**
   * The replica-eligible reads (history, candles, export, signal read-backs): on a replica of
   * READ_DATABASE_URL close enough to the primary, else on `readPool` (or `pool`).
   */
  reads: ReadRouter;
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
  const reads = createReadRouter(config, { pool, readPool });
  let closed = false;
  let changes: ChangeEvents | undefined;
  return {
    config,
    logger: log,
    pool,
    readPool,
    reads,
    pgPool,
    changeEvents() {
      if (closed) throw new Error('the runtime is closed');
      changes ??= new ChangeEvents(config.DATABASE_URL, log, CHANGE_EVENTS_APPLICATION_NAME);
      return changes;
    },
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled([
        pool.end(),
        readPool.end(),
        pgPool.end(),
        reads.close(),
        changes?.close(),
      ]);
    },
  };
}

/** Pools of the replicas of READ_DATABASE_URL, each pair sized as the primary's. */
function createReadRouter(config: Config, primary: ServerPools): ReadRouter {
  const urls = config.READ_DATABASE_URL ?? [];
  if (urls.length === 0) return new ReadRouter(primary);
  const options = {
    statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
    connectionTimeoutMs: config.REPLICA_CONNECT_TIMEOUT_MS,
  };
  const replicas = urls.map((url) => ({
    name: replicaName(url),
    open: async () => {
      const [pool, readPool] = await Promise.allSettled([
        createDatabasePool(url, { ...options, maxPoolSize: config.DATABASE_POOL_SIZE }),
        createDatabasePool(url, { ...options, maxPoolSize: config.DATABASE_READ_POOL_SIZE }),
      ]);
      if (pool.status === 'fulfilled' && readPool.status === 'fulfilled') {
        return { pool: pool.value, readPool: readPool.value };
      }
      for (const opened of [pool, readPool]) {
        if (opened.status === 'fulfilled') await opened.value.end();
      }
      throw (pool.status === 'rejected' ? pool : (readPool as PromiseRejectedResult)).reason;
    },
  }));
  const monitor = new ReplicaMonitor(config.DATABASE_URL, urls, {
    maxLagSeconds: config.REPLICA_MAX_LAG_SECONDS,
    connectTimeoutMs: config.REPLICA_CONNECT_TIMEOUT_MS,
  });
  return new ReadRouter(primary, replicas, monitor);
}
