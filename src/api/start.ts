import { dataModuleUrl } from '../shared/config.ts';
import { listen } from '../shared/http/server.ts';
import type { RoleHandle } from '../shared/roles.ts';
import type { Runtime } from '../shared/runtime.ts';
import { startSweeper } from './maintenance.ts';
import { createApiService, type ApiProfile } from './service.ts';

export interface ApiRoleOptions {
  profile?: ApiProfile;
  /** A data token made by the start command when the data role runs in this process. */
  dataToken?: string;
  /** The data role's address when it runs in this process (else DATA_URL or DATA_PORT). */
  dataUrl?: string;
}

/** Runs the application API on API_PORT, talking to the data module at DATA_URL. */
export async function startApiRole(
  runtime: Runtime,
  options: ApiRoleOptions = {},
): Promise<RoleHandle> {
  const { config, logger } = runtime;
  const dataToken = options.dataToken ?? config.DATA_TOKEN;
  const dataUrl = options.dataUrl ?? dataModuleUrl(config);
  if (options.profile !== 'docs' && !dataToken) {
    logger.warn(
      { dataUrl },
      'DATA_TOKEN is not set: the API calls the data module without a token, which only works ' +
        'from DATA_TRUSTED_NETWORKS',
    );
  }
  const { app, readiness, timeouts, live } = createApiService(runtime, {
    profile: options.profile,
    dataToken,
    dataUrl,
  });
  const server = await listen(app, config.HOST, config.API_PORT);
  live.attach(server.server);
  const stopSweeper = startSweeper(runtime.pool, timeouts, logger);
  logger.info({ url: server.url, profile: options.profile ?? 'default' }, 'API listening');
  return {
    name: 'api',
    url: server.url,
    beginDrain: () => readiness.startDraining(),
    stop: async () => {
      stopSweeper();
      await live.close();
      await server.close();
    },
  };
}
