import { refreshLegacy } from '../src/data/legacy/refresh.ts';
import type { Runtime } from '../src/shared/runtime.ts';
import { slotTask } from '../src/worker/recurring.ts';

export const LEGACY_TASK = 'refresh_legacy';

/**
 * Keeps legacy.market_snapshots up to date, once per harvest cycle (its duration shows in
 * worker_job_duration_seconds{task="refresh_legacy"}). A run spends at most half a cycle
 * catching up; a first run over a long backfilled history takes several.
 */
export function refreshLegacyTask(runtime: Runtime) {
  const budgetMs = (runtime.config.HARVEST_INTERVAL_SECONDS * 1000) / 2;
  return slotTask(LEGACY_TASK, runtime.logger, async () => {
    const result = await refreshLegacy(runtime.pool, { budgetMs });
    runtime.logger.debug({ ...result }, 'legacy snapshots refreshed');
  });
}
