import type { Task, TaskList } from 'graphile-worker';
import { dedicatedConnection } from '../src/data/ingest/connection.ts';
import { importExchangeSlice } from '../src/data/ingest/exchange/exchangeBackfill.ts';
import { createCandleSource } from '../src/data/ingest/exchange/sources.ts';
import { importFile } from '../src/data/ingest/importFile.ts';
import {
  fileJobPayload,
  INGEST_FILE_TASK,
  INGEST_SLICE_TASK,
  sliceJobPayload,
} from '../src/data/ingest/jobs.ts';
import type { UnitResult } from '../src/data/ingest/types.ts';
import type { Runtime } from '../src/shared/runtime.ts';

/**
 * Bulk ingestion jobs queued by `platform backfill --enqueue`: one file or one exchange slice each.
 * A unit is loaded in one transaction with its completion record, so a job that dies half-way
 * leaves nothing behind and its retry (or a rerun of the backfill) loads the unit whole.
 */
export function ingestTasks(runtime: Runtime): TaskList {
  const connect = dedicatedConnection(runtime.config.DATABASE_URL);
  const logger = runtime.logger.child({ component: 'ingest' });

  const report = (result: UnitResult) => {
    const { rejections, ...counts } = result;
    logger.info({ ...counts, firstRejections: rejections.slice(0, 10) }, 'ingest unit done');
    if (result.status === 'failed' || result.status === 'rejected') {
      throw new Error(`${result.label}: ${result.error ?? result.status}`);
    }
  };

  const ingestFile: Task = async (payload) => {
    const job = fileJobPayload.parse(payload);
    report(
      await importFile(connect, job.path, {
        strict: job.strict,
        force: job.force,
        ...(job.code ? { code: job.code } : {}),
      }),
    );
  };

  const ingestSlice: Task = async (payload) => {
    const { force, ...slice } = sliceJobPayload.parse(payload);
    const client = createCandleSource(slice.source, runtime.config, {
      onWait: (reason, ms) => logger.info({ reason, ms }, 'exchange backfill waiting'),
    });
    report(await importExchangeSlice(connect, client, slice, { force }));
  };

  return { [INGEST_FILE_TASK]: ingestFile, [INGEST_SLICE_TASK]: ingestSlice };
}
