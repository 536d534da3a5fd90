import Router from '@koa/router';
import Koa from 'koa';
import { sql } from 'slonik';
import { mountMetricsRoute } from '../metrics.ts';
import type { RoleHandle } from '../roles.ts';
import type { Runtime } from '../runtime.ts';
import { errorHandler } from './errorHandler.ts';
import { mountHealthRoutes, Readiness } from './health.ts';
import { requestContext } from './requestContext.ts';
import { listen } from './server.ts';

/**
 * Health and metrics for a process whose roles serve no /metrics of their own (a worker started
 * with `--role worker`, or an API: its port is public), on WORKER_METRICS_PORT: /health/live,
 * /health/ready (database reachable and every role's own check), /actuator/health and /metrics,
 * for Prometheus and container probes.
 */
export async function startOpsListener(runtime: Runtime, roles: RoleHandle[]): Promise<RoleHandle> {
  const { config } = runtime;
  const service = roles.map((r) => r.name).join('+') || 'platform';
  const logger = runtime.logger.child({ service });
  const readiness = new Readiness();
  readiness.addCheck('database', async () => {
    await runtime.pool.query(sql.unsafe`SELECT 1`);
  });
  for (const role of roles) {
    if (role.check) readiness.addCheck(role.name, () => role.check!());
  }

  const app = new Koa();
  const router = new Router();
  app.use(requestContext(service, logger));
  app.use(errorHandler(logger));
  mountHealthRoutes(router, readiness);
  mountMetricsRoute(router);
  app.use(router.routes());
  app.use(router.allowedMethods({ throw: false }));

  try {
    const server = await listen(app, config.HOST, config.WORKER_METRICS_PORT);
    logger.info({ url: server.url }, 'health and metrics listening');
    return {
      name: 'ops',
      url: server.url,
      beginDrain: () => readiness.startDraining(),
      stop: (graceMs) => server.close(graceMs),
    };
  } catch (error) {
    // A second worker on the same host (a local scale-out) must still run its jobs; only its
    // probes and metrics are missing, and the log says so.
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    logger.error(
      { port: config.WORKER_METRICS_PORT },
      'health and metrics listener NOT started: port in use (set WORKER_METRICS_PORT)',
    );
    return { name: 'ops', beginDrain: () => {}, stop: async () => {} };
  }
}
