import { readRollupLag } from '../data/history/rollupLag.ts';
import { recordedOpenMinutes } from '../data/ingest/heal/openGaps.ts';
import { readAtScrape } from '../shared/metrics.ts';
import type { RoleHandle } from '../shared/roles.ts';
import type { Runtime } from '../shared/runtime.ts';
import { startHeartbeat } from './heartbeat.ts';
import { startQueueDepthSampler } from './queueDepth.ts';

type RoleStarter = (runtime: Runtime) => Promise<RoleHandle>;

/**
 * What every worker process does beside running jobs: a heartbeat in worker_heartbeats (doctor's
 * and readiness's "is a worker alive"), the worker_queue_depth gauge, rollup_lag_seconds (the
 * rollups the worker keeps fresh) and heal_open_gap_candles (the gaps it heals), both read at
 * scrape time. Wraps the worker role so the role itself
 * stays about jobs.
 */
export function withWorkerOperations(startRole: RoleStarter): RoleStarter {
  return async (runtime) => {
    const heartbeat = await startHeartbeat(runtime.pool, runtime.logger);
    const sampler = startQueueDepthSampler(runtime.pool, runtime.logger);
    const stopLag = exposeRollupLag(runtime);
    const stopGaps = exposeOpenGaps(runtime);
    let role: RoleHandle;
    try {
      role = await startRole(runtime);
    } catch (error) {
      stopLag();
      stopGaps();
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
          stopLag();
          stopGaps();
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

/** rollup_lag_seconds from the database at every scrape; a failing read is logged once a streak. */
function exposeRollupLag(runtime: Runtime): () => void {
  let failing = false;
  return readAtScrape('rollup_lag_seconds', async () => {
    try {
      const samples = await readRollupLag(runtime.pool, runtime.config.ROLLUP_SETTLE_SECONDS);
      failing = false;
      return samples;
    } catch (error) {
      if (!failing)
        runtime.logger.warn({ err: error }, 'could not read the rollup lag for /metrics');
      failing = true;
      return [];
    }
  });
}

/** heal_open_gap_candles: what the last heal pass over each currency left open, summed. */
export function exposeOpenGaps(runtime: Runtime): () => void {
  let failing = false;
  return readAtScrape('heal_open_gap_candles', async () => {
    try {
      const minutes = await recordedOpenMinutes(runtime.pool);
      failing = false;
      return [{ labels: {}, value: minutes }];
    } catch (error) {
      if (!failing)
        runtime.logger.warn({ err: error }, 'could not read the open gap minutes for /metrics');
      failing = true;
      return [];
    }
  });
}
