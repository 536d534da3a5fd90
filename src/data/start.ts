import { listen } from '../shared/http/server.ts';
import type { Runtime } from '../shared/runtime.ts';
import type { RoleHandle } from '../shared/roles.ts';
import { generateCurrencies } from './currencies/generator.ts';
import { exposeIngestTotals } from './ingest/totalsMetrics.ts';
import { createDataService } from './service.ts';

/**
 * Runs the data module: refreshes the currency list, then serves HTTP on DATA_PORT, with the
 * ingest totals of every process (backfills included) in its /metrics.
 */
export async function startDataRole(runtime: Runtime): Promise<RoleHandle> {
  const { config, logger } = runtime;
  await generateCurrencies({
    pool: runtime.pool,
    logger,
    loadFromExchange: config.PLATFORM_LOAD_CURRENCIES,
  });
  const { app, readiness } = createDataService(runtime);
  const server = await listen(app, config.HOST, config.DATA_PORT);
  const stopTotals = exposeIngestTotals(runtime.pool, logger);
  logger.info({ url: server.url }, 'data module listening');
  return {
    name: 'data',
    url: server.url,
    servesMetrics: true,
    beginDrain: () => readiness.startDraining(),
    stop: async (graceMs) => {
      stopTotals();
      await server.close(graceMs);
    },
  };
}
