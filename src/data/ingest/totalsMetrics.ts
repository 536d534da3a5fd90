import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { Logger } from '../../shared/logger.ts';
import { readAtScrape, type ScrapeSample } from '../../shared/metrics.ts';
import type { IngestCounts } from './totals.ts';

// Bulk ingestion's running totals (totals.ts) as the data module's ingest_rows_*_total.

const totalsRow = z.object({
  source: z.string(),
  inserted: z.number(),
  duplicates: z.number(),
  rejected: z.number(),
});

export async function readIngestTotals(pool: DatabasePool) {
  return pool.any(sql.type(totalsRow)`
    SELECT source, inserted::float8 AS inserted, duplicates::float8 AS duplicates,
           rejected::float8 AS rejected
    FROM ingest_row_totals
  `);
}

const METRICS = {
  ingest_rows_inserted_total: 'inserted',
  ingest_rows_duplicate_total: 'duplicates',
  ingest_rows_rejected_total: 'rejected',
} as const;

/**
 * Serves the totals as ingest_rows_*_total from this process's /metrics (the data module's),
 * read once per scrape for the three metrics. Returns the function that stops it.
 */
export function exposeIngestTotals(pool: DatabasePool, logger: Logger): () => void {
  let reading: Promise<readonly z.infer<typeof totalsRow>[]> | undefined;
  let failing = false;
  const read = () => {
    reading ??= readIngestTotals(pool)
      .then((rows) => {
        failing = false;
        return rows;
      })
      .catch((error: unknown) => {
        if (!failing) logger.warn({ err: error }, 'could not read the ingest totals for /metrics');
        failing = true;
        return [];
      })
      .finally(() => {
        // One query serves the three metrics of a scrape; the next scrape reads again.
        setImmediate(() => {
          reading = undefined;
        });
      });
    return reading;
  };
  const columns = Object.entries(METRICS) as Array<[string, keyof IngestCounts]>;
  const stops = columns.map(([name, column]) =>
    readAtScrape(name, async (): Promise<ScrapeSample[]> =>
      (await read()).map((row) => ({ labels: { source: row.source }, value: row[column] })),
    ),
  );
  return () => {
    for (const stop of stops) stop();
  };
}
