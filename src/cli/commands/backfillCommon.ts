import type { DatabaseConfig } from '../../shared/config/database.ts';
import type { ExchangeSource } from '../../data/ingest/exchange/exchangeBackfill.ts';
import { parseIsoMicros } from '../../data/ingest/timeParsing.ts';
import type { SIMULATED_SOURCE } from '../../data/ingest/simulated/days.ts';
import type { ARCHIVE_SOURCE } from '../../data/ingest/archive/archivePlan.ts';
import type { DatabasePool } from '../../shared/db/pool.ts';
import { printJson } from '../context.ts';

// What the ways of `platform backfill` (files, an exchange, the simulated market) share.

export interface BackfillOptions {
  strict?: boolean;
  force?: boolean;
  enqueue?: boolean;
  json?: boolean;
  code?: string;
  source?: ExchangeSource | typeof SIMULATED_SOURCE | typeof ARCHIVE_SOURCE;
  days?: number;
  from?: string;
  to?: string;
  interval: string;
  quote?: string;
  all?: boolean;
  sinceLast?: boolean;
  prepend?: boolean;
}

export async function withPool<T>(
  config: DatabaseConfig,
  work: (pool: DatabasePool) => Promise<T>,
) {
  // Slonik is loaded by the ways that use it (--enqueue, the exchanges), not by a file load.
  const { createDatabasePool } = await import('../../shared/db/pool.ts');
  const pool = await createDatabasePool(config.DATABASE_URL, { maxPoolSize: 1 });
  try {
    return await work(pool);
  } finally {
    await pool.end();
  }
}

export function parseTimeOption(
  text: string,
  name: string,
  usage: (message: string) => never,
): number {
  const micros = parseIsoMicros(text.trim());
  if (micros === null) usage(`${name} must be an ISO 8601 date or time, e.g. 2024-01-01`);
  return Math.floor(micros / 1000);
}

export function reportEnqueued(count: number, unit: string, json?: boolean) {
  if (json) return printJson({ enqueued: count });
  process.stdout.write(
    `enqueued ${count} ${unit} job${count === 1 ? '' : 's'}; workers (platform start --role worker) load them, each once\n`,
  );
}
