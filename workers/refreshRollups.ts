import type { Task } from 'graphile-worker';
import { refreshRollups } from '../src/data/history/refresh.ts';
import type { Runtime } from '../src/shared/runtime.ts';

/**
 * Brings the rollups up to date: recomputes ranges that backfills marked, then materialises
 * complete buckets from the watermarks (rollup tables), or re-materialises the marked ranges
 * (continuous aggregates, whose policies do the rest).
 */
export function refreshRollupsTask(runtime: Runtime): Task {
  return async () => {
    const result = await refreshRollups(runtime.pool, {
      settleSeconds: runtime.config.ROLLUP_SETTLE_SECONDS,
    });
    runtime.logger.debug({ ...result }, 'rollups refreshed');
  };
}
