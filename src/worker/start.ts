import { run, type Runner, type TaskList } from 'graphile-worker';
import { createTaskList, crontab } from '../../workers/index.ts';
import type { RoleHandle } from '../shared/roles.ts';
import type { Runtime } from '../shared/runtime.ts';
import { instrumentTaskList } from './instrumentation.ts';
import { workerLogger } from './logger.ts';
import { poolTracker, withBoundedStop } from './shutdown.ts';

export interface WorkerOptions {
  concurrency?: number;
  taskList?: TaskList;
}

/** Starts a graphile-worker runner on the runtime's pg pool; several may run on one database. */
export async function startWorkerRunner(
  runtime: Runtime,
  options: WorkerOptions = {},
): Promise<Runner> {
  const graceMs = runtime.config.SHUTDOWN_GRACE_SECONDS * 1000;
  const tracker = poolTracker();
  const runner = await run({
    pgPool: runtime.pgPool,
    taskList: instrumentTaskList(options.taskList ?? createTaskList(runtime)),
    crontab: options.taskList ? '' : crontab.join('\n'),
    concurrency: options.concurrency ?? 4,
    noHandleSignals: true,
    logger: workerLogger(runtime.logger),
    // Jobs see helpers.abortSignal fire when the shutdown grace is over.
    gracefulShutdownAbortTimeout: graceMs,
    events: tracker.events,
    // Batched (even with no delay), completions and failures are flushed before stop()
    // resolves; unbatched, graphile-worker does not wait for them and they could reach a
    // pool the shutdown has already closed.
    preset: { worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
  });
  return withBoundedStop(runner, tracker.pool, graceMs, runtime.logger);
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
