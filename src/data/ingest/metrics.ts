import { counter } from '../../shared/metrics.ts';

/** Bulk ingestion counters, by the `source` the rows were stored with. */
export const ingestMetrics = {
  inserted: counter(
    'ingest_rows_inserted_total',
    'Price rows written by bulk ingestion (backfill, bulk HTTP route, exchange slices).',
    ['source'],
  ),
  duplicates: counter(
    'ingest_rows_duplicate_total',
    'Rows skipped by bulk ingestion because the same currency and time was already stored.',
    ['source'],
  ),
  rejected: counter(
    'ingest_rows_rejected_total',
    'Malformed or unknown-currency rows refused by bulk ingestion.',
    ['source'],
  ),
};
