import type { JobHelpers, Task } from 'graphile-worker';
import { z } from 'zod';
import type { Logger } from '../shared/logger.ts';
import { counter } from '../shared/metrics.ts';
import type { Runtime } from '../shared/runtime.ts';
import { enqueueJob } from './jobs.ts';
import { startTicker, type Ticker } from './ticker.ts';

// Sub-minute recurring jobs. graphile-worker's crontab is minute-grained, so each recurring task
// gets a ticker (src/worker/ticker.ts): the elected leader enqueues one job per slot, keyed by
// the slot, and any worker runs it (graphile-worker hands each job to one worker). The job
// carries its slot; a slot whose time has passed is skipped rather than done late, and the task
// claims its slot in its own transaction (src/worker/slots.ts) so it is done at most once.

export interface RecurringTask {
  /** graphile-worker task identifier, run once per slot. */
  task: string;
  intervalMs: number;
  /** Attempts at one slot's job; retries happen only while the slot is still fresh. */
  maxAttempts?: number;
}

const slotPayload = z.object({
  slotStart: z.iso.datetime(),
  intervalMs: z.number().int().positive(),
});

export interface SlotContext {
  start: Date;
  intervalMs: number;
  /** Epoch ms from which the slot is stale: its work is skipped rather than written late. */
  deadline: number;
}

/** A slot is stale once the one after next has begun (and never sooner than 3 s). */
export function staleAfterMs(intervalMs: number): number {
  return Math.max(2 * intervalMs, 3000);
}

export function slotContext(start: Date, intervalMs: number): SlotContext {
  return { start, intervalMs, deadline: start.getTime() + staleAfterMs(intervalMs) };
}

const slotOutcomes = counter(
  'recurring_slot_jobs_total',
  'Recurring slot jobs by task and outcome (done, stale, failed, retried).',
  ['task', 'outcome'],
);

/** Starts one ticker per recurring task; each leader enqueues its task's job per slot. */
export function startRecurringTickers(runtime: Runtime, tasks: RecurringTask[]): Ticker[] {
  return tasks.map((recurring) =>
    startTicker({
      name: recurring.task,
      intervalMs: recurring.intervalMs,
      connectionString: runtime.config.DATABASE_URL,
      logger: runtime.logger,
      onTick: (slot) =>
        enqueueJob(
          runtime.pool,
          recurring.task,
          { slotStart: slot.start.toISOString(), intervalMs: slot.intervalMs },
          {
            // One job per slot: a second leader (or a retry of the tick) adds nothing.
            jobKey: `${recurring.task}:${slot.start.getTime()}`,
            jobKeyMode: 'unsafe_dedupe',
            runAt: slot.start,
            maxAttempts: recurring.maxAttempts ?? 2,
          },
        ),
    }),
  );
}

/**
 * Wraps a per-slot task: parses the slot, skips it when stale, and lets graphile-worker retry a
 * failure only while a retry could still be on time. A failure past that is logged and the job
 * completes, so failed slots never pile up in the queue.
 */
export function slotTask(
  name: string,
  logger: Logger,
  run: (slot: SlotContext, helpers: JobHelpers) => Promise<void>,
): Task {
  const log = logger.child({ task: name });
  return async (payload, helpers) => {
    const parsed = slotPayload.safeParse(payload);
    if (!parsed.success) {
      log.error({ payload }, 'recurring job without a valid slot; dropped');
      return;
    }
    const slot = slotContext(new Date(parsed.data.slotStart), parsed.data.intervalMs);
    if (Date.now() >= slot.deadline) {
      slotOutcomes.inc({ task: name, outcome: 'stale' });
      log.debug({ slot: parsed.data.slotStart }, 'stale slot skipped');
      return;
    }
    try {
      await run(slot, helpers);
      slotOutcomes.inc({ task: name, outcome: 'done' });
    } catch (error) {
      const canRetry =
        helpers.job.attempts < helpers.job.max_attempts && Date.now() < slot.deadline;
      slotOutcomes.inc({ task: name, outcome: canRetry ? 'retried' : 'failed' });
      log.error(
        {
          slot: parsed.data.slotStart,
          err: error instanceof Error ? error.message : String(error),
        },
        canRetry ? 'slot failed; graphile-worker will retry it' : 'slot failed; skipped',
      );
      if (canRetry) throw error;
    }
  };
}
