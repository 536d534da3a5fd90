import { sql, type CommonQueryMethods, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { Config } from '../../../shared/config.ts';
import { enqueueJob } from '../../../worker/jobs.ts';
import { marketSourceNames } from '../../market/sources/index.ts';
import { SIMULATED_SOURCE } from './days.ts';

// The first start of a platform on the simulated market loads the market's past in the
// background (the worker job SIMULATED_HISTORY_TASK), so charts and history routes have weeks to
// show at once. Guard rails: only when every configured source is the simulated one (invented
// prices never mix with an exchange's), only into a database without price history, and never
// twice (its days are recorded as ingest units; once any is, no start queues the job again).

export const SIMULATED_HISTORY_TASK = 'load_simulated_history';
const MAX_ATTEMPTS = 5;
// Serialises the check-and-queue of processes starting at the same moment.
const QUEUE_LOCK_KEY = 727_100_040;

export const simulatedHistoryPayload = z.object({
  seed: z.string().min(1),
  untilMs: z.number().int(),
  days: z.number().int().min(1),
  codes: z.array(z.string()).optional(),
});
export type SimulatedHistoryPayload = z.infer<typeof simulatedHistoryPayload>;

export type FirstStartDecision =
  'queued' | 'off' | 'real_source' | 'loaded_before' | 'existing_data' | 'already_queued';

/** Whether MARKET_SOURCE prices everything from the simulated market alone. */
export function simulatedOnly(config: Pick<Config, 'MARKET_SOURCE'>): boolean {
  return marketSourceNames(config).every((name) => name === SIMULATED_SOURCE);
}

/**
 * Queues the load of SIMULATED_HISTORY_DAYS days ending now when the guard rails allow it, and
 * says why not otherwise. "Now" is fixed in the job, so a job resumed after a restart finishes the
 * same days; prices harvested meanwhile are newer and do not count as existing history.
 */
export async function queueSimulatedHistory(
  pool: DatabasePool,
  config: Pick<Config, 'MARKET_SOURCE' | 'MARKET_SIMULATED_SEED' | 'SIMULATED_HISTORY_DAYS'>,
  now = Date.now(),
): Promise<FirstStartDecision> {
  if (config.SIMULATED_HISTORY_DAYS === 0) return 'off';
  if (!simulatedOnly(config)) return 'real_source';
  const untilMs = Math.floor(now / 60_000) * 60_000;
  return pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(${QUEUE_LOCK_KEY})`);
    const state = await tx.one(sql.type(
      z.object({ loaded: z.boolean(), existing: z.boolean(), queued: z.boolean() }),
    )`
      SELECT EXISTS (SELECT 1 FROM ingest_units WHERE kind = 'simulated') AS loaded,
             EXISTS (SELECT 1 FROM price_observations
                      WHERE time < ${sql.timestamp(new Date(untilMs))}) AS existing,
             EXISTS (SELECT 1 FROM graphile_worker.jobs
                      WHERE task_identifier = ${SIMULATED_HISTORY_TASK}) AS queued
    `);
    if (state.loaded) return 'loaded_before';
    if (state.queued) return 'already_queued';
    if (state.existing) return 'existing_data';
    await enqueueSimulatedHistory(tx, {
      seed: config.MARKET_SIMULATED_SEED,
      untilMs,
      days: config.SIMULATED_HISTORY_DAYS,
    });
    return 'queued';
  });
}

/**
 * The job itself. Starts share one key (two starting at once queue one job);
 * `platform backfill --source simulated --enqueue` names its own days.
 */
export async function enqueueSimulatedHistory(
  db: CommonQueryMethods,
  payload: SimulatedHistoryPayload,
  jobKey = SIMULATED_HISTORY_TASK,
): Promise<void> {
  await enqueueJob(db, SIMULATED_HISTORY_TASK, simulatedHistoryPayload.parse(payload), {
    jobKey,
    jobKeyMode: 'unsafe_dedupe',
    maxAttempts: MAX_ATTEMPTS,
  });
}
