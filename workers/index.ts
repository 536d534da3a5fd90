import type { TaskList } from 'graphile-worker';
import type { Runtime } from '../src/shared/runtime.ts';

/**
 * Every task the worker runs, by identifier. Tasks are factories over the runtime so they share
 * the process's pools, logger and configuration.
 */
export function createTaskList(_runtime: Runtime): TaskList {
  return {};
}

/**
 * Recurring jobs in graphile-worker's crontab syntax (UTC, minute-grained; distributed-safe: each
 * slot runs once across all workers). Sub-minute cadences need their own scheduling.
 */
export const crontab: string[] = [];
