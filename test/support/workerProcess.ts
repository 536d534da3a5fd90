import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import pg from 'pg';
import { sql } from 'slonik';
import { PLATFORM_BIN } from './cli.ts';
import type { TestRuntime } from './runtime.ts';
import { until } from './wait.ts';

export interface WorkerProcess {
  child: ChildProcess;
  exited: Promise<unknown>;
}

/**
 * Starts `platform start --role worker` as its own process, as an operator would, so that it can
 * be killed with SIGKILL (an in-process runner cannot die mid-transaction). The caller stops it.
 */
export function startWorkerProcess(databaseUrl: string): WorkerProcess {
  const child = spawn(process.execPath, [PLATFORM_BIN, 'start', '--role', 'worker'], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'silent',
      PLATFORM_LOAD_CURRENCIES: 'false',
    },
    stdio: 'ignore',
  });
  return { child, exited: once(child, 'exit') };
}

/**
 * Starts a worker process and kills it with SIGKILL while it imports the ingest unit `unitKey`
 * (already enqueued). The unit's completion record is held in an open transaction meanwhile, so
 * the import can stream its rows but never commit: the kill always lands mid-import, however fast
 * the machine.
 */
export async function killWorkerMidImport(runtime: TestRuntime, unitKey: string): Promise<void> {
  const blocker = new pg.Client({ connectionString: runtime.config.DATABASE_URL });
  await blocker.connect();
  await blocker.query('BEGIN');
  await blocker.query(
    `INSERT INTO ingest_units (unit_key, kind, source, label, rows_read, rows_inserted, rows_duplicate, rows_rejected, load_path)
     VALUES ($1, 'file', 'test', 'blocker', 0, 0, 0, 0, 'direct')`,
    [unitKey],
  );
  const worker = startWorkerProcess(runtime.config.DATABASE_URL);
  try {
    // Mid-import: its COPY has been streaming for a moment, or it already waits to commit.
    await until(
      () =>
        runtime.pool.exists(sql.unsafe`
          SELECT 1 FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = 'platform-ingest'
            AND ((query LIKE 'COPY%' AND state = 'active' AND now() - query_start > interval '300 ms')
                 OR wait_event_type = 'Lock')`),
      60_000,
      'the worker to be mid-import',
    );
  } finally {
    worker.child.kill('SIGKILL');
    await worker.exited;
    await blocker.query('ROLLBACK');
    await blocker.end();
  }
}
