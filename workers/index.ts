import type { TaskList } from 'graphile-worker';
import type { Runtime } from '../src/shared/runtime.ts';
import { refreshRollupsTask } from './refreshRollups.ts';

/**
 * Every task the worker runs, by identifier. Tasks are factories over the runtime so they share
 * the process's pools, logger and configuration.
 */
export function createTaskList(runtime: Runtime): TaskList {
  return {
    refresh_rollups: refreshRollupsTask(runtime),
  };
}

/**
 * Recurring jobs in graphile-worker's crontab syntax (UTC, minute-grained; distributed-safe: each
 * slot runs once across all workers). Sub-minute cadences need their own scheduling.
 */
export const crontab: string[] = [
  // One queue and one pending job at a time; a run that overlaps anyway skips (advisory lock).
  '* * * * * refresh_rollups ?queue=rollups&jobKey=refresh_rollups&jobKeyMode=preserve_run_at&max=3',
];
