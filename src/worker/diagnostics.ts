import type { Check, DoctorContext } from '../shared/diagnostics.ts';
import { HEARTBEAT_LIVE_WINDOW_SECONDS, listWorkers } from './heartbeat.ts';
import { readQueueDepth } from './queueDepth.ts';

// A due job that nobody picked up for this long means the workers are missing or swamped.
const BACKLOG_LIMIT_SECONDS = 300;

/** Doctor: is any worker alive (it beat within HEARTBEAT_LIVE_WINDOW_SECONDS)? */
export async function checkWorkers({ pool }: DoctorContext): Promise<Check[]> {
  const workers = await listWorkers(pool);
  const live = workers.filter((w) => w.live);
  if (live.length > 0) {
    const names = live.map((w) => `${w.hostname}/${w.pid}`).join(', ');
    return [{ name: 'workers', ok: true, detail: `${live.length} live (${names})` }];
  }
  const last = workers[0];
  return [
    {
      name: 'workers',
      ok: false,
      detail: last
        ? `no live worker; the last one (${last.hostname}/${last.pid}) was seen ` +
          `${ageText(last.lastSeenAt)} ago`
        : // A worker that stops cleanly removes its row: none may also mean all stopped.
          'no live worker: none is registered (none has run, or every one stopped)',
      fix:
        'start one: `platform start --role worker` (or `npm start`, or ' +
        '`docker compose up -d worker`); a worker is live when it beat within ' +
        `${HEARTBEAT_LIVE_WINDOW_SECONDS} s`,
    },
  ];
}

/** Doctor: are due jobs being picked up, and how many gave up? */
export async function checkJobQueue({ pool }: DoctorContext): Promise<Check[]> {
  const depth = await readQueueDepth(pool);
  const waiting = depth.oldestReadySeconds ?? 0;
  const detail =
    `${depth.ready} due, ${depth.running} running, ${depth.scheduled} scheduled, ` +
    `${depth.failed} failed for good` +
    (depth.ready > 0 ? `; the oldest due job has waited ${Math.round(waiting)} s` : '');
  return [
    {
      name: 'jobs',
      ok: waiting < BACKLOG_LIMIT_SECONDS,
      detail,
      fix:
        'due jobs are not being picked up: start more workers (`docker compose up -d --scale ' +
        'worker=4`) or look for a task that hangs (worker logs, worker_job_duration_seconds)',
    },
  ];
}

function ageText(date: Date): string {
  const seconds = Math.max(0, Math.round((Date.now() - date.getTime()) / 1000));
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}
