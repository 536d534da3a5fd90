import { parseCrontab, run, type Runner, type TaskList } from 'graphile-worker';
import { createTaskList, crontab, recurringTasks } from '../../workers/index.ts';
import { queueSimulatedHistory } from '../data/ingest/simulated/firstStart.ts';
import type { RoleHandle } from '../shared/roles.ts';
import type { Runtime } from '../shared/runtime.ts';
import { instrumentTaskList } from './instrumentation.ts';
import { workerLogger } from './logger.ts';
import { startWorkerPresence } from './presence.ts';
import { startRecurringTickers } from './recurring.ts';
import { poolTracker, withBoundedStop } from './shutdown.ts';
import type { Ticker } from './ticker.ts';

export interface WorkerOptions {
  concurrency?: number;
  taskList?: TaskList;
}

/**
 * Starts a graphile-worker runner on the runtime's pg pool; several may run on one database. Jobs
 * left locked by workers that died are released at start-up (see presence.ts).
 */
export async function startWorkerRunner(
  runtime: Runtime,
  options: WorkerOptions = {},
): Promise<Runner> {
  const graceMs = runtime.config.SHUTDOWN_GRACE_SECONDS * 1000;
  const presence = await startWorkerPresence({
    connectionString: runtime.config.DATABASE_URL,
    logger: runtime.logger,
  });
  // One event stream for both listeners: presence locks per worker id, and the pool handle the
  // bounded stop needs.
  const tracker = poolTracker(presence.events);
  let runner: Runner;
  try {
    runner = await run({
      pgPool: runtime.pgPool,
      taskList: instrumentTaskList(options.taskList ?? createTaskList(runtime)),
      // Always explicit, so graphile-worker never looks for a crontab file in the working directory.
      parsedCronItems: parseCrontab(options.taskList ? '' : crontab.join('\n')),
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
  } catch (error) {
    await presence.stop();
    throw error;
  }
  await presence.sweep().catch((error: unknown) => {
    runtime.logger.warn({ err: error }, 'could not release jobs of departed workers');
  });
  // However the runner ends (stop, fatal error), the presence connection closes with it.
  void runner.promise.finally(() => presence.stop()).catch(() => {});
  const bounded = withBoundedStop(runner, tracker.pool, graceMs, runtime.logger);
  return {
    ...bounded,
    async stop(reason?: string) {
      try {
        await bounded.stop(reason);
      } finally {
        await presence.stop();
      }
    },
  };
}

export interface Worker {
  runner: Runner;
  tickers: Ticker[];
  stop(): Promise<void>;
}

/** A whole worker: the runner with every task, and the tickers of the recurring tasks. */
export async function startWorker(runtime: Runtime, options: WorkerOptions = {}): Promise<Worker> {
  const runner = await startWorkerRunner(runtime, options);
  const tickers = startRecurringTickers(runtime, recurringTasks(runtime));
  return {
    runner,
    tickers,
    async stop() {
      // Tickers first, so no new slot is enqueued while the runner finishes its jobs.
      await Promise.all(tickers.map((ticker) => ticker.stop()));
      await runner.stop();
    },
  };
}

export async function startWorkerRole(runtime: Runtime): Promise<RoleHandle> {
  // Before the first harvest of this process: its prices must not count as existing history.
  const history = await queueSimulatedHistory(runtime.pool, runtime.config);
  if (history === 'queued') {
    runtime.logger.info(
      { days: runtime.config.SIMULATED_HISTORY_DAYS },
      "simulated history queued: a fresh database gets the simulated market's past in the background",
    );
  }
  const worker = await startWorker(runtime);
  runtime.logger.info(
    {
      sources: runtime.config.MARKET_SOURCE,
      harvestIntervalSeconds: runtime.config.HARVEST_INTERVAL_SECONDS,
    },
    'worker running',
  );
  return {
    name: 'worker',
    beginDrain: () => {},
    stop: () => worker.stop(),
  };
}
