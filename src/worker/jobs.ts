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
      ${task},
      ${sql.jsonb(payload as never)},
      queue_name => ${options.queueName ?? null},
      run_at => ${options.runAt ? sql.timestamp(options.runAt) : null},
      max_attempts => ${options.maxAttempts ?? null},
      job_key => ${options.jobKey ?? null},
      priority => ${options.priority ?? null},
      job_key_mode => ${options.jobKeyMode ?? null}
    )
  `);
}
