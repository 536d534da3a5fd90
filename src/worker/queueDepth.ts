import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { Logger } from '../shared/logger.ts';
import { workerQueueDepth } from '../shared/metrics.ts';

export const QUEUE_SAMPLE_INTERVAL_MS = 10_000;
// graphile-worker treats a lock older than this as abandoned by a dead worker.
const LOCK_EXPIRY = '4 hours';

const depthRow = z.object({
  ready: z.number(),
  scheduled: z.number(),
  running: z.number(),
  failed: z.number(),
  oldestReadySeconds: z.number().nullable(),
});
export type QueueDepth = z.infer<typeof depthRow>;

/** Counts the shared job queue by state, through graphile-worker's public `jobs` view. */
export async function readQueueDepth(pool: DatabasePool): Promise<QueueDepth> {
  return pool.one(sql.type(depthRow)`
    WITH jobs AS (
      SELECT run_at, attempts, max_attempts,
             locked_at IS NOT NULL AND locked_at > now() - ${LOCK_EXPIRY}::interval AS locked
      FROM graphile_worker.jobs
    )
    SELECT
      count(*) FILTER (WHERE NOT locked AND attempts < max_attempts AND run_at <= now())::int AS ready,
      count(*) FILTER (WHERE NOT locked AND attempts < max_attempts AND run_at > now())::int AS scheduled,
      count(*) FILTER (WHERE locked)::int AS running,
      count(*) FILTER (WHERE NOT locked AND attempts >= max_attempts)::int AS failed,
      extract(epoch FROM now() - min(run_at) FILTER (
        WHERE NOT locked AND attempts < max_attempts AND run_at <= now()
      ))::float8 AS "oldestReadySeconds"
    FROM jobs
  `);
}

export async function sampleQueueDepth(pool: DatabasePool): Promise<QueueDepth> {
  const depth = await readQueueDepth(pool);
  for (const state of ['ready', 'scheduled', 'running', 'failed'] as const) {
    workerQueueDepth.set({ state }, depth[state]);
  }
  return depth;
}

/** Keeps worker_queue_depth current; sampling failures are logged once per streak. */
export function startQueueDepthSampler(
  pool: DatabasePool,
  logger: Logger,
  intervalMs = QUEUE_SAMPLE_INTERVAL_MS,
) {
  let failing = false;
  let running: Promise<unknown> = Promise.resolve();
  const sample = () => {
    running = sampleQueueDepth(pool).then(
      () => {
        failing = false;
      },
      (error: unknown) => {
        if (!failing) logger.warn({ err: error }, 'queue depth sampling failed');
        failing = true;
      },
    );
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
