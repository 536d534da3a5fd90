import { sql } from 'slonik';
import { z } from 'zod';
import type { Check, DoctorContext } from '../../../shared/diagnostics.ts';
import { planSimulatedDays, simulatedDayKey } from './days.ts';
import { SIMULATED_HISTORY_TASK, simulatedHistoryPayload, simulatedOnly } from './firstStart.ts';

const jobRow = z.object({
  payload: z.unknown(),
  attempts: z.number(),
  max_attempts: z.number(),
  last_error: z.string().nullable(),
  running: z.boolean(),
});

/**
 * `platform doctor` line for the simulated history of a first start: its progress while the job
 * runs ("simulated history: 21/30 days"), a failure once the job gave up, else what is loaded or
 * why nothing was.
 */
export async function checkSimulatedHistory({ pool, config }: DoctorContext): Promise<Check[]> {
  const job = await pool.maybeOne(sql.type(jobRow)`
    SELECT p.payload, j.attempts, j.max_attempts, j.last_error, j.locked_at IS NOT NULL AS running
      FROM graphile_worker.jobs j
      JOIN graphile_worker._private_jobs p ON p.id = j.id -- the public view leaves out payloads
     WHERE j.task_identifier = ${SIMULATED_HISTORY_TASK}
     ORDER BY j.id LIMIT 1`);
  const name = 'history';
  if (job) {
    const payload = simulatedHistoryPayload.parse(job.payload);
    const keys = planSimulatedDays(payload.seed, payload.untilMs, payload.days).map(
      simulatedDayKey,
    );
    const loaded = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM ingest_units WHERE unit_key = ANY(${sql.array(keys, 'text')})`);
    const progress = `simulated history: ${loaded}/${payload.days} days`;
    if (job.attempts >= job.max_attempts) {
      return [
        {
          name,
          ok: false,
          detail: `${progress}; the load gave up: ${job.last_error ?? 'unknown error'}`,
          fix: `see the worker log; \`platform backfill --source simulated --days ${payload.days}\` loads it by hand`,
        },
      ];
    }
    const state = job.running ? 'loading' : job.attempts > 0 ? 'retrying' : 'waiting for a worker';
    return [{ name, ok: true, detail: `${progress} (${state})` }];
  }
  const days = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM ingest_units WHERE kind = 'simulated'`);
  const why =
    config.SIMULATED_HISTORY_DAYS === 0
      ? 'none (SIMULATED_HISTORY_DAYS=0)'
      : !simulatedOnly(config)
        ? 'none (MARKET_SOURCE names a real exchange)'
        : 'none (the database held price history at its first start)';
  return [
    {
      name,
      ok: true,
      detail:
        days > 0
          ? `simulated history: ${days} day${days === 1 ? '' : 's'} loaded`
          : `simulated history: ${why}`,
    },
  ];
}
