import type Router from '@koa/router';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

// One registry per process: in `--role all` the data module, the API and the worker report
// through the same /metrics, labelled by service where it matters.
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

export const httpRequestDuration = new Histogram({
  name: 'http_server_request_duration_seconds',
  help: 'Duration of HTTP requests by service, method, route template and status code.',
  labelNames: ['service', 'method', 'route', 'status_code'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10],
  registers: [metricsRegistry],
});

export const httpActiveRequests = new Gauge({
  name: 'http_server_active_requests',
  help: 'HTTP requests being served right now.',
  labelNames: ['service'] as const,
  registers: [metricsRegistry],
});

/** Creates a metric once per process; later calls (a second app in the same process) reuse it. */
export function counter<L extends string>(name: string, help: string, labelNames: readonly L[]) {
  return (
    (existing(name, 'counter', labelNames) as Counter<L> | undefined) ??
    new Counter({ name, help, labelNames, registers: [metricsRegistry] })
  );
}

export function gauge<L extends string>(name: string, help: string, labelNames: readonly L[]) {
  return (
    (existing(name, 'gauge', labelNames) as Gauge<L> | undefined) ??
    new Gauge({ name, help, labelNames, registers: [metricsRegistry] })
  );
}

export function histogram<L extends string>(
  name: string,
  help: string,
  labelNames: readonly L[],
  buckets: number[],
) {
  return (
    (existing(name, 'histogram', labelNames) as Histogram<L> | undefined) ??
    new Histogram({ name, help, labelNames, buckets, registers: [metricsRegistry] })
  );
}

/** The metric already registered under `name`, refusing one of another type or other labels. */
function existing(name: string, type: string, labelNames: readonly string[]) {
  const metric = metricsRegistry.getSingleMetric(name) as
    { type?: string; labelNames?: readonly string[] } | undefined;
  if (!metric) return undefined;
  const known = [...(metric.labelNames ?? [])].sort().join(',');
  if (metric.type !== type || known !== [...labelNames].sort().join(',')) {
    throw new Error(
      `metric ${name} is already a ${metric.type} with labels [${known}]; ` +
        `it cannot also be a ${type} with labels [${labelNames.join(',')}]`,
    );
  }
  return metric;
}

// ---------------------------------------------------------------------------------------------
// The platform's metric catalogue. Every module reports through these (import the object, or call
// the helper above with the same name and labels: both give the same metric). They are created
// here, at load, so the names exist in every process's /metrics from the start, the Grafana
// dashboard (deploy/grafana) can rely on them, and a second definition with other labels fails
// at start-up instead of at the first observation.

/** Price rows written by bulk ingestion (HTTP bulk route, `platform backfill`), by source. */
export const ingestRowsInserted = counter(
  'ingest_rows_inserted_total',
  'Price rows written by bulk ingestion (backfill, bulk HTTP route, exchange slices).',
  ['source'],
);
/** Rows skipped because that currency and instant were already stored (re-runs are idempotent). */
export const ingestRowsDuplicate = counter(
  'ingest_rows_duplicate_total',
  'Rows skipped by bulk ingestion because the same currency and time was already stored.',
  ['source'],
);
/** Rows refused by bulk ingestion (bad values, unknown codes), by source. */
export const ingestRowsRejected = counter(
  'ingest_rows_rejected_total',
  'Malformed or unknown-currency rows refused by bulk ingestion.',
  ['source'],
);

/** Minutes without observation that gap healing filled with an exchange's candle, by source. */
export const healFilledCandles = counter(
  'heal_filled_candles_total',
  'One-minute candles gap healing loaded from an exchange into minutes without observation.',
  ['source'],
);
/** Minutes gap healing recorded as known gaps: no exchange had them (delisting, halt). */
export const healKnownGapCandles = counter(
  'heal_known_gap_candles_total',
  'Minutes gap healing recorded as known gaps (no exchange had a candle for them).',
  ['source'],
);

/** One harvest cycle (fetch from every source and write), by outcome. */
export const harvestCycleDuration = histogram(
  'harvest_cycle_duration_seconds',
  'Duration of a harvest cycle (fetch and write), by outcome.',
  ['outcome'],
  [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
);
/** Unix time of the last fetch that priced at least one currency: freshness per source. */
export const harvestSourceLastSuccess = gauge(
  'harvest_source_last_success_timestamp_seconds',
  'Unix time of the last fetch that priced at least one currency, by source.',
  ['source'],
);
export const harvestSourceFetchErrors = counter(
  'harvest_source_fetch_errors_total',
  'Price fetches that failed, by source and reason (timeout, http, rate_limited, …).',
  ['source', 'reason'],
);
export const harvestSourceFetchDuration = histogram(
  'harvest_source_fetch_duration_seconds',
  'Time one source took to answer a harvest cycle, failures included.',
  ['source'],
  [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
);

/** Jobs finished by this process, by task and outcome (success, failure). */
export const workerJobs = counter(
  'worker_jobs_total',
  'Jobs run by this worker, by task and outcome (success or failure).',
  ['task', 'outcome'],
);
export const workerJobDuration = histogram(
  'worker_job_duration_seconds',
  'Duration of jobs run by this worker, by task (failures included).',
  ['task'],
  [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
);
/**
 * Jobs in the shared queue by state (ready, scheduled, running, failed): the same number seen from
 * every worker, so aggregate it with max(), not sum().
 */
export const workerQueueDepth = gauge(
  'worker_queue_depth',
  'Jobs in the queue by state: ready (due), scheduled (future), running (locked), failed (no attempts left).',
  ['state'],
);

/** How far each rollup level trails the raw price data. */
export const rollupLag = gauge(
  'rollup_lag_seconds',
  'Age of the newest raw data not yet reflected in each rollup level.',
  ['level'],
);

/** Socket.IO clients connected to this process, by namespace. */
export const socketioConnectedClients = gauge(
  'socketio_connected_clients',
  'Socket.IO clients connected to this process, by namespace.',
  ['namespace'],
);

/** GET /metrics: this process's registry in Prometheus' text format. */
export function mountMetricsRoute(router: Router): void {
  router.get('/metrics', async (ctx) => {
    ctx.type = metricsRegistry.contentType;
    ctx.body = await metricsRegistry.metrics();
  });
}
