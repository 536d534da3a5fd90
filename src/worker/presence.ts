import { EventEmitter } from 'node:events';
import type { WorkerEvents } from 'graphile-worker';
import pg from 'pg';
import type { Logger } from '../shared/logger.ts';
import { counter } from '../shared/metrics.ts';
import { SESSION_OPTIONS } from '../shared/db/sessionSettings.ts';

// graphile-worker (open-source edition) has no heartbeat: a job whose worker died (SIGKILL, power
// loss) stays locked for 4 hours before another worker may take it. Each worker process therefore
// announces its graphile worker ids by holding one session advisory lock per id on a connection
// of its own; the server drops those locks the moment the process's connection closes. A sweep
// (at start-up and then periodically) releases every job locked by a worker id whose lock nobody
// holds — its process is gone — so a restarted worker resumes the work at once.

/** First key of every presence lock (the ticker's namespace is 727_100). */
export const PRESENCE_LOCK_CLASS = 727_200;
/** Presence connections name themselves so (see `platform doctor`). */
export const PRESENCE_APPLICATION_NAME = 'worker:presence';
// A worker takes its lock a few milliseconds after it starts looking for jobs; a job locked more
// recently than this is never swept, so a worker still announcing itself keeps its job.
const SWEEP_GRACE_SECONDS = 5;

const recoveredJobs = counter(
  'worker_recovered_jobs_total',
  'Jobs released because the worker holding them was gone.',
  [],
);

export interface WorkerPresenceOptions {
  connectionString: string;
  logger: Logger;
  /** How often the live process sweeps for jobs of dead workers. */
  sweepIntervalMs?: number;
}

export interface WorkerPresence {
  /** Give this to graphile-worker's `run({ events })`: each new worker id gets its lock. */
  events: WorkerEvents;
  /** Releases jobs of workers that are gone; returns the worker ids released. */
  sweep(): Promise<string[]>;
  stop(): Promise<void>;
}

export async function startWorkerPresence(options: WorkerPresenceOptions): Promise<WorkerPresence> {
  const log = options.logger.child({ component: 'worker-presence' });
  const ids = new Set<string>();
  let client: pg.Client | null = null;
  let stopped = false;
  let reconnecting: Promise<void> | null = null;
  // Every use of the presence connection runs after the previous one has finished: worker ids
  // arrive in bursts and the sweep runs beside them, and a pg client must not be handed a query
  // while it still executes one (deprecated in pg 8, an error in pg 9).
  let queue: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(work: () => Promise<T>): Promise<T> => {
    const next = queue.then(work);
    queue = next.catch(() => {});
    return next;
  };

  const lock = (c: pg.Client, id: string) =>
    c.query('SELECT pg_advisory_lock($1, hashtext($2))', [PRESENCE_LOCK_CLASS, id]);

  const connect = async () => {
    const fresh = new pg.Client({
      connectionString: options.connectionString,
      application_name: PRESENCE_APPLICATION_NAME,
      keepAlive: true,
      options: SESSION_OPTIONS,
      connectionTimeoutMillis: 5000,
    });
    fresh.on('error', () => {});
    fresh.on('end', () => {
      if (client === fresh) client = null;
      if (!stopped) scheduleReconnect();
    });
    await fresh.connect();
    // Published only inside the queue, once it holds every current lock, so nothing else uses it
    // meanwhile; ids that arrive while it is being locked are taken here too (a Set's iteration
    // sees entries added during it).
    await exclusive(async () => {
      for (const id of ids) await lock(fresh, id);
      client = fresh;
    });
  };

  // After a database restart the locks are gone with the session: take them all again.
  const scheduleReconnect = () => {
    reconnecting ??= (async () => {
      while (!stopped && !client) {
        try {
          await connect();
          log.info('presence connection restored');
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 1000).unref());
        }
      }
      reconnecting = null;
    })();
  };

  await connect();

  const events = new EventEmitter() as WorkerEvents;
  const announce = (id: string) => {
    ids.add(id);
    void exclusive(async () => {
      if (client) await lock(client, id);
    }).catch(() => {});
  };
  const withdraw = (id: string) => {
    ids.delete(id);
    void exclusive(async () => {
      await client?.query('SELECT pg_advisory_unlock($1, hashtext($2))', [PRESENCE_LOCK_CLASS, id]);
    }).catch(() => {});
  };
  // graphile-worker 0.18 locks the jobs it fetches with its worker pool's id (workers share a
  // pool's batched fetches), not the worker's: without the pool's lock every sweep took a job
  // running for more than the grace period for abandoned and released it to be run again.
  events.on('pool:create', ({ workerPool }) => announce(workerPool.id));
  events.on('pool:release', ({ workerPool }) => withdraw(workerPool.id));
  events.on('worker:create', ({ worker }) => announce(worker.workerId));
  events.on('worker:release', ({ worker }) => withdraw(worker.workerId));

  const sweep = (): Promise<string[]> => exclusive(sweepNow);
  const sweepNow = async (): Promise<string[]> => {
    const c = client;
    if (!c) return [];
    // A lock this session can take is held by nobody: that worker's process is gone. (Ids of
    // this process are held by this very session, so they are skipped explicitly.)
    const { rows } = await c.query<{ locked_by: string }>(
      `SELECT DISTINCT locked_by FROM graphile_worker._private_jobs
        WHERE locked_by IS NOT NULL AND locked_at < now() - make_interval(secs => $1)
          AND NOT (locked_by = ANY($2::text[]))`,
      [SWEEP_GRACE_SECONDS, [...ids]],
    );
    const gone: string[] = [];
    for (const { locked_by: id } of rows) {
      const { rows: taken } = await c.query<{ free: boolean }>(
        'SELECT pg_try_advisory_lock($1, hashtext($2)) AS free',
        [PRESENCE_LOCK_CLASS, id],
      );
      if (!taken[0]?.free) continue;
      await c.query('SELECT pg_advisory_unlock($1, hashtext($2))', [PRESENCE_LOCK_CLASS, id]);
      gone.push(id);
    }
    if (gone.length === 0) return gone;
    const { rows: counted } = await c.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM graphile_worker._private_jobs WHERE locked_by = ANY($1::text[])`,
      [gone],
    );
    const rowCount = counted[0]?.n ?? 0;
    // graphile-worker's own release (what WorkerUtils.forceUnlockWorkers calls): jobs and queues.
    await c.query('SELECT graphile_worker.force_unlock_workers($1::text[])', [gone]);
    recoveredJobs.inc(rowCount);
    log.warn({ workers: gone, jobs: rowCount }, 'released jobs of workers that are gone');
    return gone;
  };

  const sweepSafely = () =>
    sweep().catch((error: unknown) => log.debug({ err: error }, 'presence sweep failed'));
  const timer = setInterval(() => void sweepSafely(), options.sweepIntervalMs ?? 10_000);
  timer.unref();

  return {
    events,
    sweep,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await reconnecting;
      await exclusive(async () => {});
      const closing = client;
      client = null;
      await closing?.end().catch(() => {});
    },
  };
}
