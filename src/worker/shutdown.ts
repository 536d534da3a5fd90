import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Runner, WorkerEvents, WorkerPool } from 'graphile-worker';
import type { Logger } from '../shared/logger.ts';

/**
 * Events for run() that keep hold of the runner's worker pool: its forcefulShutdown is the one way
 * to fail running jobs once a graceful stop has begun (runner.kill() does nothing by then).
 */
export function poolTracker(events: WorkerEvents = new EventEmitter() as WorkerEvents): {
  events: WorkerEvents;
  pool: () => WorkerPool | undefined;
} {
  let pool: WorkerPool | undefined;
  events.on('pool:create', ({ workerPool }) => {
    pool = workerPool;
  });
  return { events, pool: () => pool };
}

/**
 * A runner whose stop() lets running jobs finish for at most `graceMs` (they also see
 * helpers.abortSignal fire then), then fails the ones still running, so another worker retries
 * them at once instead of waiting hours for their lock to expire.
 */
export function withBoundedStop(
  runner: Runner,
  pool: () => WorkerPool | undefined,
  graceMs: number,
  logger: Logger,
): Runner {
  return {
    ...runner,
    async stop(reason?: string) {
      const stopping = runner.stop(reason);
      const finished = await Promise.race([
        stopping.then(() => true),
        sleep(graceMs, false, { ref: false }),
      ]);
      if (finished) return;
      logger.warn(
        { graceMs },
        'jobs still running after the shutdown grace; failing them for retry',
      );
      // The graceful stop keeps waiting for the stuck job; only the forced one is awaited.
      stopping.catch(() => {});
      const forced = await pool()?.forcefulShutdown('shutdown grace exceeded');
      logger.warn(
        { jobs: forced?.forceFailedJobs.map((j) => j.id) ?? [] },
        'jobs failed for retry',
      );
    },
  };
}
