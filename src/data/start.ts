import { listen } from '../shared/http/server.ts';
import type { Runtime } from '../shared/runtime.ts';
import type { RoleHandle } from '../shared/roles.ts';
import { generateCurrencies } from './currencies/generator.ts';
import { createDataService } from './service.ts';

/** Runs the data module: refreshes the currency list, then serves HTTP on DATA_PORT. */
export async function startDataRole(runtime: Runtime): Promise<RoleHandle> {
  const { config, logger } = runtime;
  await generateCurrencies({
    pool: runtime.pool,
    logger,
    loadFromExchange: config.PLATFORM_LOAD_CURRENCIES,
  });
  const { app, readiness } = createDataService(runtime);
  const server = await listen(app, config.HOST, config.DATA_PORT);
  logger.info({ url: server.url }, 'data module listening');
  return {
    name: 'data',
    url: server.url,
    servesMetrics: true,
    beginDrain: () => readiness.startDraining(),
    stop: (graceMs) => server.close(graceMs),
  };
}
