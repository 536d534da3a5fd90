import { dedicatedConnection } from '../../data/ingest/connection.ts';
import { expandInputs, planFile, type PlannedFile } from '../../data/ingest/files.ts';
import { importFile } from '../../data/ingest/importFile.ts';
import { failedResult } from '../../data/ingest/loader.ts';
import {
  formatSummary,
  SummaryCollector,
  type BackfillSummary,
} from '../../data/ingest/summary.ts';
import type { DatabaseConfig } from '../../shared/config/database.ts';
import { EXIT } from '../exitCodes.ts';
import { createProgress } from '../progress.ts';
import { reportEnqueued, withPool, type BackfillOptions } from './backfillCommon.ts';

// `platform backfill <paths…>`: files loaded here, or handed to the worker with --enqueue.

export async function backfillFiles(
  config: DatabaseConfig,
  paths: string[],
  options: BackfillOptions,
): Promise<BackfillSummary | null> {
  const collector = new SummaryCollector();
  const { files, missing } = await expandInputs(paths);
  for (const path of missing) collector.add(failedResult(path, 'no such file or directory'));
  const plans: PlannedFile[] = [];
  for (const path of files) {
    try {
      plans.push(await planFile(path));
    } catch (error) {
      collector.add(failedResult(path, error));
    }
  }

  if (options.enqueue) {
    // The job queue's client is loaded only to enqueue.
    const { enqueueFileJobs } = await import('../../data/ingest/jobs.ts');
    const count = await withPool(config, (pool) =>
      enqueueFileJobs(pool, plans, {
        strict: !!options.strict,
        force: !!options.force,
        ...(options.code ? { code: options.code } : {}),
      }),
    );
    reportEnqueued(count, 'file', options.json);
    const summary = collector.result();
    if (summary.failed > 0) {
      process.stdout.write(formatSummary(summary));
      process.exitCode = EXIT.failure;
    }
    return null;
  }

  const total = plans.reduce((sum, p) => sum + p.progressBytes, 0);
  const progress = createProgress(total, { quiet: !!options.json });
  const connect = dedicatedConnection(config.DATABASE_URL);
  try {
    for (const plan of plans) {
      let reported = 0;
      const result = await importFile(connect, plan, {
        strict: !!options.strict,
        force: !!options.force,
        ...(options.code ? { code: options.code } : {}),
        onProgress: (rows, bytes) => {
          reported += bytes;
          progress.advance(bytes, rows);
        },
      });
      // Skipped and failed files report no bytes: account for them so the ETA stays honest.
      progress.advance(plan.progressBytes - reported, 0);
      collector.add(result);
    }
  } finally {
    progress.stop();
  }
  return collector.result();
}
