import { sql, type CommonQueryMethods } from 'slonik';

export interface JobOptions {
  /** Deduplicates: a job with the same key replaces the pending one (see graphile-worker job keys). */
  jobKey?: string;
  jobKeyMode?: 'replace' | 'preserve_run_at' | 'unsafe_dedupe';
  queueName?: string;
  runAt?: Date;
  maxAttempts?: number;
  priority?: number;
}

/**
 * Enqueues a job through graphile-worker's SQL API, so it can share the transaction of the write
 * that causes it: either both happen or neither.
 */
export async function enqueueJob(
  db: CommonQueryMethods,
  task: string,
  payload: unknown,
  options: JobOptions = {},
): Promise<void> {
  await db.query(sql.unsafe`
    SELECT graphile_worker.add_job(
      ${task}::text,
      ${sql.json(payload as never)}::json,
      queue_name => ${options.queueName ?? null}::text,
      run_at => ${options.runAt ? sql.timestamp(options.runAt) : null}::timestamptz,
      max_attempts => ${options.maxAttempts ?? null}::int,
      job_key => ${options.jobKey ?? null}::text,
      priority => ${options.priority ?? null}::int,
      job_key_mode => ${options.jobKeyMode ?? 'replace'}::text
    )
  `);
}
