import { parseCrontab, run, type Runner, type TaskList } from 'graphile-worker';
import { createTaskList, crontab } from '../../workers/index.ts';
import type { RoleHandle } from '../shared/roles.ts';
import type { Runtime } from '../shared/runtime.ts';
import { workerLogger } from './logger.ts';

export interface WorkerOptions {
  concurrency?: number;
  taskList?: TaskList;
}

/** Starts a graphile-worker runner on the runtime's pg pool; several may run on one database. */
export async function startWorkerRunner(
  runtime: Runtime,
  options: WorkerOptions = {},
): Promise<Runner> {
  return run({
    pgPool: runtime.pgPool,
    taskList: options.taskList ?? createTaskList(runtime),
    // Always explicit, so graphile-worker never looks for a crontab file in the working directory.
    parsedCronItems: parseCrontab(options.taskList ? '' : crontab.join('\n')),
    concurrency: options.concurrency ?? 4,
    noHandleSignals: true,
    logger: workerLogger(runtime.logger),
  });
}

export async function startWorkerRole(runtime: Runtime): Promise<RoleHandle> {
  const runner = await startWorkerRunner(runtime);
  runtime.logger.info('worker running');
  return {
    name: 'worker',
    beginDrain: () => {},
    stop: () => runner.stop(),
  };
}
