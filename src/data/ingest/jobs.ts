import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { enqueueJob } from '../../worker/jobs.ts';
import {
  EXCHANGE_SOURCES,
  INTERVALS,
  sliceKey,
  type ExchangeSlice,
} from './exchange/exchangeBackfill.ts';
import type { PlannedFile } from './files.ts';

// --enqueue: one graphile-worker job per file or per exchange slice, keyed by the unit so the same
// unit is never queued twice; several workers share the jobs (each job runs once).

export const INGEST_FILE_TASK = 'ingest_file';
export const INGEST_SLICE_TASK = 'ingest_exchange_slice';
/** Failures of a unit are retried a few times (a database restart); input errors fail each time. */
const MAX_ATTEMPTS = 3;

export const fileJobPayload = z.object({
  path: z.string().min(1),
  strict: z.boolean().default(false),
  force: z.boolean().default(false),
  code: z.string().optional(),
});
export type FileJobPayload = z.infer<typeof fileJobPayload>;

export const sliceJobPayload = z.object({
  source: z.enum(EXCHANGE_SOURCES),
  code: z.string().min(1),
  symbol: z.string().min(1),
  interval: z.enum(INTERVALS as [string, ...string[]]),
  fromMs: z.number().int(),
  toMs: z.number().int(),
  force: z.boolean().default(false),
});

export async function enqueueFileJobs(
  pool: DatabasePool,
  files: PlannedFile[],
  options: { strict?: boolean; force?: boolean; code?: string },
): Promise<number> {
  await pool.transaction(async (tx) => {
    for (const file of files) {
      const payload: FileJobPayload = {
        path: file.path,
        strict: options.strict ?? false,
        force: options.force ?? false,
        ...(options.code ? { code: options.code } : {}),
      };
      await enqueueJob(tx, INGEST_FILE_TASK, payload, {
        jobKey: `${INGEST_FILE_TASK}:${file.key}`,
        maxAttempts: MAX_ATTEMPTS,
      });
    }
  });
  return files.length;
}

export async function enqueueSliceJobs(
  pool: DatabasePool,
  slices: ExchangeSlice[],
  options: { force?: boolean },
): Promise<number> {
  await pool.transaction(async (tx) => {
    for (const slice of slices) {
      await enqueueJob(
        tx,
        INGEST_SLICE_TASK,
        { ...slice, force: options.force ?? false },
        { jobKey: `${INGEST_SLICE_TASK}:${sliceKey(slice)}`, maxAttempts: MAX_ATTEMPTS },
      );
    }
  });
  return slices.length;
}

/** Jobs of the ingest tasks still queued or running. */
export async function pendingIngestJobs(pool: DatabasePool): Promise<number> {
  return pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM graphile_worker.jobs
    WHERE task_identifier IN (${INGEST_FILE_TASK}, ${INGEST_SLICE_TASK})
      AND attempts < max_attempts
  `);
}
