import type { RoleHandle } from '../shared/roles.ts';
import type { Runtime } from '../shared/runtime.ts';
import { startHeartbeat } from './heartbeat.ts';
import { startQueueDepthSampler } from './queueDepth.ts';

type RoleStarter = (runtime: Runtime) => Promise<RoleHandle>;

/**
 * What every worker process does beside running jobs: a heartbeat in worker_heartbeats (doctor's
 * and readiness's "is a worker alive") and the worker_queue_depth gauge. Wraps the worker role so
 * the role itself stays about jobs.
 */
export function withWorkerOperations(startRole: RoleStarter): RoleStarter {
  return async (runtime) => {
    const heartbeat = await startHeartbeat(runtime.pool, runtime.logger);
    const sampler = startQueueDepthSampler(runtime.pool, runtime.logger);
    let role: RoleHandle;
    try {
      role = await startRole(runtime);
    } catch (error) {
      await Promise.allSettled([sampler.stop(), heartbeat.stop()]);
      throw error;
    }
    let stopped = false;
    return {
      ...role,
      async stop(graceMs) {
        try {
          await role.stop(graceMs);
        } finally {
          stopped = true;
          await Promise.allSettled([sampler.stop(), heartbeat.stop()]);
        }
      },
      async check() {
        if (stopped) throw new Error('worker stopped');
        await role.check?.();
        await heartbeat.check();
      },
    };
  };
}
