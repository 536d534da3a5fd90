import { sql } from 'slonik';
import { pendingMigrations } from '../shared/db/migrationState.ts';
import { Readiness } from '../shared/http/health.ts';
import { RouteRegistry } from '../shared/http/routes.ts';
import { createHttpService } from '../shared/http/service.ts';
import type { Runtime } from '../shared/runtime.ts';
import { challengeHeaders, createScopeGuard } from './auth.ts';
import { readGates } from './readGates.ts';
import { DayStatsCache } from './history/dayStats.ts';
import { readRollupStatus } from './history/rollupState.ts';
import { RunCache } from './history/runCache.ts';
import { registerCandleRoutes } from './routes/candles/candleRoutes.ts';
import { registerCurrencyRoutes } from './routes/currency/currencyRoutes.ts';
import { SnapshotCache } from './routes/currency/snapshotCache.ts';
import { VerifiedTokens } from './tokens/verifiedTokens.ts';
import { registerPriceBulkRoutes } from './routes/prices/bulkRoutes.ts';
import { registerNewsSentimentRoutes } from './routes/newsSentiment/newsSentimentRoutes.ts';
import { registerPredictionRoutes } from './routes/predictions/predictionRoutes.ts';
import { naiveTimeZone } from './signals/naiveTimeZone.ts';
import { registerTrainingSessionRoutes } from './routes/trainingSessions/trainingSessionRoutes.ts';

export const DATA_SERVICE_NAME = 'data';

/** Registers every data-module route; later modules (ingest, signals, analysts) add theirs here. */
export function dataRoutes(runtime: Runtime): RouteRegistry {
  const registry = new RouteRegistry({ errorHeaders: { 401: challengeHeaders } });
  const events = runtime.changeEvents();
  const requireScope = createScopeGuard(
    new VerifiedTokens(runtime.pool, events),
    runtime.config.DATA_TRUSTED_NETWORKS,
  );
  const gates = readGates(runtime.config);
  const deps = {
    pool: runtime.pool,
    reads: runtime.reads,
    gates,
    requireScope,
    maxPoints: runtime.config.HISTORY_MAX_POINTS,
    historyCache:
      runtime.config.HISTORY_CACHE_MB > 0
        ? new RunCache(runtime.config.HISTORY_CACHE_MB * 1024 * 1024)
        : undefined,
    // Built on the primary: a change heard is committed there, while a replica may not have
    // replayed it yet (a list built from it would be kept as if current).
    snapshot: new SnapshotCache(runtime.pool, new DayStatsCache(runtime.pool), events),
    bulk: {
      maxItems: runtime.config.SIGNAL_BULK_MAX_ITEMS,
      maxBytes: runtime.config.SIGNAL_BULK_MAX_BYTES,
    },
  };
  registerCurrencyRoutes(registry, deps);
  registerPriceBulkRoutes(registry, {
    pgPool: runtime.pgPool,
    requireScope,
    maxFutureSeconds: runtime.config.PRICE_MAX_FUTURE_SECONDS,
    limits: {
      maxItems: runtime.config.PRICE_BULK_MAX_ITEMS,
      maxBytes: runtime.config.PRICE_BULK_MAX_BYTES,
    },
  });
  registerNewsSentimentRoutes(registry, deps);
  registerPredictionRoutes(registry, deps);
  registerTrainingSessionRoutes(registry, deps);
  registerCandleRoutes(registry, { ...deps, logger: runtime.logger });
  return registry;
}

export function createDataService(runtime: Runtime, readiness = new Readiness()) {
  readiness.addCheck('database', async () => {
    await runtime.pool.query(sql.unsafe`SELECT 1`);
  });
  readiness.addCheck('migrations', async () => {
    const pending = await pendingMigrations(runtime.pool);
    if (pending.length > 0) throw new Error(`pending migrations: ${pending.join(', ')}`);
  });
  readiness.addDetail('rollups', () => readRollupStatus(runtime.pool));
  // Whether the snapshot and token checks may be answered from memory (false: every request
  // reads the database until the notification connection is back).
  readiness.addDetail('changeNotifications', () =>
    Promise.resolve({ listening: runtime.changeEvents()?.isListening ?? false }),
  );
  // Each replica's lag and whether reads go to it; they never make the service unready: the
  // primary answers while they are aside.
  if (runtime.reads.hasReplicas) {
    readiness.addDetail('replicas', async () => ({
      maxLagSeconds: runtime.config.REPLICA_MAX_LAG_SECONDS,
      replicas: runtime.reads.status(),
    }));
  }
  return createHttpService({
    name: DATA_SERVICE_NAME,
    logger: runtime.logger.child({ service: DATA_SERVICE_NAME }),
    routes: dataRoutes(runtime),
    readiness,
    jsonLimit: '1mb',
    requestTimeoutMs: runtime.config.REQUEST_TIMEOUT_MS,
    middleware: [naiveTimeZone(runtime.config.DATA_NAIVE_TIME_ZONE)],
    openApi: {
      title: 'Market data module',
      version: '1.0.0',
      description:
        'Internal system of record for market snapshots, price history and signal inputs. ' +
        'Every /data/** route needs `Authorization: Bearer <token>` (see `platform token create`).',
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description: 'A service token with read and/or write scope',
        },
      },
    },
  });
}
