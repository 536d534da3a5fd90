import type pg from 'pg';

// Bulk ingestion's running totals (sql/0190_ingest_row_totals.sql): added to in the transaction
// that loads a unit, read by the data module at every scrape (totalsMetrics.ts, apart so that the
// loader does not load the metrics library). Counting in memory would lose what a `platform
// backfill` process loads, since nothing scrapes it.

export interface IngestCounts {
  inserted: number;
  duplicates: number;
  rejected: number;
}

/** Adds a unit's counts to its source's totals; part of the unit's transaction. */
export async function addIngestTotals(
  client: pg.ClientBase,
  source: string,
  counts: IngestCounts,
): Promise<void> {
  if (counts.inserted + counts.duplicates + counts.rejected === 0) return;
  // The last statement before COMMIT, so the source's row stays locked only for the commit.
  await client.query(
    `INSERT INTO ingest_row_totals AS t (source, inserted, duplicates, rejected)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (source) DO UPDATE SET
       inserted = t.inserted + EXCLUDED.inserted,
       duplicates = t.duplicates + EXCLUDED.duplicates,
       rejected = t.rejected + EXCLUDED.rejected`,
    [source, counts.inserted, counts.duplicates, counts.rejected],
  );
}
