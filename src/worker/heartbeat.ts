import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { Logger } from '../shared/logger.ts';

/** How often a worker says it is alive, and how long a silence still counts as alive. */
export const HEARTBEAT_INTERVAL_MS = 5_000;
export const HEARTBEAT_LIVE_WINDOW_SECONDS = 30;
// Rows of workers that died long ago are of no use to anyone.
const FORGET_AFTER = '1 day';

export interface Heartbeat {
  workerId: string;
  /** Throws when the last beat did not reach the database. */
  check(): Promise<void>;
  /** Stops beating and removes this worker's row. */
  stop(): Promise<void>;
}

export function newWorkerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/** Records this worker in worker_heartbeats now and every HEARTBEAT_INTERVAL_MS. */
export async function startHeartbeat(
  pool: DatabasePool,
  logger: Logger,
  intervalMs = HEARTBEAT_INTERVAL_MS,
): Promise<Heartbeat> {
  const workerId = newWorkerId();
  let lastError: Error | undefined;
  const beat = async () => {
    try {
      await pool.query(sql.unsafe`
        INSERT INTO worker_heartbeats (worker_id, hostname, pid)
        VALUES (${workerId}, ${hostname()}, ${process.pid})
        ON CONFLICT (worker_id) DO UPDATE SET last_seen_at = now()
      `);
      await pool.query(sql.unsafe`
        DELETE FROM worker_heartbeats WHERE last_seen_at < now() - ${FORGET_AFTER}::interval
      `);
      if (lastError) logger.info('heartbeat reaches the database again');
      lastError = undefined;
    } catch (error) {
      if (!lastError) logger.warn({ err: error }, 'heartbeat failed');
      lastError = error as Error;
    }
  };
  await beat();
  let running: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    running = beat();
  }, intervalMs);
  timer.unref();
  return {
    workerId,
    async check() {
      if (lastError) throw new Error(`heartbeat failing: ${lastError.message}`);
    },
    async stop() {
      clearInterval(timer);
      await running;
      await pool
        .query(sql.unsafe`DELETE FROM worker_heartbeats WHERE worker_id = ${workerId}`)
        .catch(() => {});
    },
  };
}

export const liveWorkerSchema = z.object({
  workerId: z.string(),
  hostname: z.string(),
  pid: z.number(),
  startedAt: z.date(),
  lastSeenAt: z.date(),
  live: z.boolean(),
});
export type WorkerPresence = z.infer<typeof liveWorkerSchema>;

/** Every worker that beat within the last day, newest first, with whether it counts as live. */
export async function listWorkers(pool: DatabasePool): Promise<WorkerPresence[]> {
  const rows = await pool.any(sql.type(liveWorkerSchema)`
    SELECT worker_id AS "workerId", hostname, pid, started_at AS "startedAt",
           last_seen_at AS "lastSeenAt",
           last_seen_at > now() - make_interval(secs => ${HEARTBEAT_LIVE_WINDOW_SECONDS}) AS live
    FROM worker_heartbeats
    ORDER BY last_seen_at DESC
  `);
  return [...rows];
}
