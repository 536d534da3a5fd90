import type { TaskList } from 'graphile-worker';
import type { Runtime } from '../src/shared/runtime.ts';
import { ingestTasks } from './ingest.ts';
import type { RecurringTask } from '../src/worker/recurring.ts';
import { createHarvestTask, HARVEST_TASK } from './harvestPrices.ts';
import { healGapsTask, HEAL_TASK } from './healGaps.ts';
import { refreshLegacyTask, LEGACY_TASK } from './refreshLegacy.ts';
import { refreshRollupsTask } from './refreshRollups.ts';
import { REORDER_TASK, reorderChunksTask } from './reorderChunks.ts';
import { SIMULATED_HISTORY_TASK, simulatedHistoryTask } from './simulatedHistory.ts';

/**
 * Every task the worker runs, by identifier. Tasks are factories over the runtime so they share
 * the process's pools, logger and configuration.
 */
export function createTaskList(runtime: Runtime): TaskList {
  return {
    refresh_rollups: refreshRollupsTask(runtime),
    [HARVEST_TASK]: createHarvestTask(runtime),
    [HEAL_TASK]: healGapsTask(runtime),
    [SIMULATED_HISTORY_TASK]: simulatedHistoryTask(runtime),
    [LEGACY_TASK]: refreshLegacyTask(runtime),
    [REORDER_TASK]: reorderChunksTask(runtime),
    ...ingestTasks(runtime),
  };
}

/**
 * Sub-minute recurring tasks: a leader-elected ticker enqueues one job per slot (see
 * src/worker/recurring.ts). Each slot runs once across all workers.
 */
export function recurringTasks(runtime: Runtime): RecurringTask[] {
  return [
    {
      task: HARVEST_TASK,
      intervalMs: runtime.config.HARVEST_INTERVAL_SECONDS * 1000,
      maxAttempts: 2,
    },
    {
      // The analysis service's wide table follows the harvest (and backfills) cycle by cycle.
      task: LEGACY_TASK,
      intervalMs: runtime.config.HARVEST_INTERVAL_SECONDS * 1000,
      maxAttempts: 1,
    },
  ];
}

/**
 * Recurring jobs in graphile-worker's crontab syntax (UTC, minute-grained; distributed-safe: each
 * slot runs once across all workers). Sub-minute cadences go in recurringTasks above.
 */
export const crontab: string[] = [
  // One queue and one pending job at a time; a run that overlaps anyway skips (advisory lock).
  '* * * * * refresh_rollups ?queue=rollups&jobKey=refresh_rollups&jobKeyMode=preserve_run_at&max=3',
  // Gap healing: one pending job at a time; currencies are locked one by one (advisory locks).
  '*/15 * * * * heal_gaps ?queue=heal&jobKey=heal_gaps&jobKeyMode=preserve_run_at&max=1',
  // Closed chunks into currency order, a few an hour: each chunk once, a lock of seconds each.
  '41 * * * * reorder_chunks ?queue=maintenance&jobKey=reorder_chunks&jobKeyMode=preserve_run_at&max=2',
];
