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

/**
 * Requests admission control refused instead of doing their work (src/shared/http/admission.ts):
 * by route group (the limit's name) and reason: `rate_limited` (429, a client over its rate),
 * `queue_full`, `waited_too_long`, `client_gone` (503, a concurrency limit and its queue).
 */
export const httpRequestsShed = new Counter({
  name: 'http_requests_shed_total',
  help: 'Requests refused by admission control, by route group and reason (rate_limited: 429; queue_full, waited_too_long, client_gone: 503).',
  labelNames: ['route_group', 'reason'] as const,
  registers: [metricsRegistry],
});

/**
 * The platform's own time to refuse (src/shared/http/shedAnswers.ts): from a request's arrival at
 * the HTTP server's request listener to its 429/503 handed to the socket, by the same route group
 * and reason as http_requests_shed_total. A bucket ends at 100 ms, the goal for a shed answer.
 */
export const httpShedAnswerDuration = new Histogram({
  name: 'http_shed_answer_duration_seconds',
  help: "Time from a shed request's arrival at the HTTP server to its 429/503 handed to the socket, by route group and reason.",
  labelNames: ['route_group', 'reason'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
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

// ---------------------------------------------------------------------------------------------
// Metrics read at scrape time. Some truths live outside this process's memory: rows a
// `platform backfill` process loaded (nobody scrapes the CLI), how far the rollups trail (true
// even while every worker idles), clients connected to a Socket.IO server. Their owners register a
// reader; each scrape asks every reader of the metric and shows what they answer, nothing else.

/** One sample a scrape-time reader reports. */
export interface ScrapeSample {
  labels: Record<string, string>;
  value: number;
}
type ScrapeReader = () => Promise<ScrapeSample[]> | ScrapeSample[];

const scrapeReaders = new Map<string, Set<ScrapeReader>>();

/**
 * Reads `name` from `read` at every scrape, until the returned function is called. `read` should
 * answer [] when it cannot tell (the database is away): the metric then has no sample, which
 * Prometheus shows as absent rather than as a made-up value; a throw counts the same.
 */
export function readAtScrape(name: string, read: ScrapeReader): () => void {
  if (!metricsRegistry.getSingleMetric(name))
    throw new Error(`${name} is not a scrape-time metric`);
  const readers = scrapeReaders.get(name) ?? new Set();
  scrapeReaders.set(name, readers);
  readers.add(read);
  return () => {
    readers.delete(read);
  };
}

/**
 * Asks every reader of `name` and combines their samples by label set: summed (clients of several
 * servers in one process) or the largest (several readers of the same database, as in tests or
 * `--role all`, must not count it twice).
 */
async function scrapeSamples(name: string, combine: 'sum' | 'max'): Promise<ScrapeSample[]> {
  const readers = [...(scrapeReaders.get(name) ?? [])];
  const answers = await Promise.all(
    readers.map(async (read) => {
      try {
        return await read();
      } catch {
        return [];
      }
    }),
  );
  const combined = new Map<string, ScrapeSample>();
  for (const sample of answers.flat()) {
    const key = JSON.stringify(Object.entries(sample.labels).sort());
    const known = combined.get(key);
    if (!known) combined.set(key, { labels: sample.labels, value: sample.value });
    else if (combine === 'sum') known.value += sample.value;
    else known.value = Math.max(known.value, sample.value);
  }
  return [...combined.values()];
}

function scrapeGauge<L extends string>(
  name: string,
  help: string,
  labelNames: readonly L[],
  combine: 'sum' | 'max',
) {
  return new Gauge({
    name,
    help,
    labelNames,
    registers: [metricsRegistry],
    async collect() {
      const samples = await scrapeSamples(name, combine);
      this.reset();
      for (const sample of samples)
        this.set(sample.labels as Partial<Record<L, string>>, sample.value);
    },
  });
}

/** A counter whose running total is kept elsewhere (a table), read at each scrape. */
function scrapeCounter<L extends string>(name: string, help: string, labelNames: readonly L[]) {
  return new Counter({
    name,
    help,
    labelNames,
    registers: [metricsRegistry],
    async collect() {
      const samples = await scrapeSamples(name, 'max');
      this.reset();
      for (const sample of samples)
        this.inc(sample.labels as Partial<Record<L, string>>, sample.value);
    },
  });
}

/**
 * Rows bulk ingestion wrote, found already stored, or refused, by source: every path (HTTP bulk
 * route, `platform backfill`, worker imports, exchange slices, gap healing), whatever process ran
 * it. Totals kept in the database (sql/0190_ingest_row_totals.sql) and served by every data module
 * instance: aggregate instances with max(), not sum().
 */
scrapeCounter(
  'ingest_rows_inserted_total',
  'Price rows written by bulk ingestion (bulk HTTP route, backfill, imports, exchange slices, healing), from the database.',
  ['source'],
);
scrapeCounter(
  'ingest_rows_duplicate_total',
  'Rows skipped by bulk ingestion because the same currency and time was already stored, from the database.',
  ['source'],
);
scrapeCounter(
  'ingest_rows_rejected_total',
  'Malformed or unknown-currency rows refused by bulk ingestion, from the database.',
  ['source'],
);

/**
 * How long the oldest price data a rollup level should already reflect has waited for it (0 when
 * the level is up to date), read from the database by every worker: aggregate with max().
 */
scrapeGauge(
  'rollup_lag_seconds',
  'Seconds the oldest raw data due in each rollup level has waited for it (0: up to date).',
  ['level'],
  'max',
);

/**
 * Minutes without observation in the look-back window that are neither healed nor known gaps
 * (sql/0240's rule, the heal job's own), as each currency's last heal pass left them; read from
 * the database by every worker at scrape time: aggregate with max(). Minutes an exchange failed
 * on stay in it until a pass fills them; `platform doctor` counts them at the moment it runs.
 */
scrapeGauge(
  'heal_open_gap_candles',
  'Minutes without observation in the gap-healing look-back window that the last heal pass of each currency left open (neither healed nor known gaps).',
  [],
  'max',
);

/** Socket.IO clients connected to this process, by namespace. */
scrapeGauge(
  'socketio_connected_clients',
  'Socket.IO clients connected to this process, by namespace.',
  ['namespace'],
  'sum',
);

/** Seconds of primary history each streaming replica has not replayed (WAL positions). */
export const replicaLagSeconds = gauge(
  'database_replica_lag_seconds',
  "Seconds of the primary's history each read replica has not replayed yet, from WAL positions (0 when caught up, also when the primary is idle); absent while unreachable.",
  ['replica'],
);
export const replicaLagBytes = gauge(
  'database_replica_lag_bytes',
  'Bytes of WAL the primary has written that each read replica has not replayed yet.',
  ['replica'],
);
/** 1 while reads go to the replica; 0 while it is left aside (too far behind, unreachable). */
export const replicaInUse = gauge(
  'database_replica_in_use',
  'Whether reads go to each replica (1) or it is left aside, too far behind or unreachable (0).',
  ['replica'],
);
/** Reads routed, by the server that took them ('primary' or a replica's host:port/database). */
export const routedReads = counter(
  'database_routed_reads_total',
  'Replica-eligible reads (history, candles, export, signal read-backs) by the server that answered.',
  ['server'],
);
/** Reads a replica failed and the primary answered instead. */
export const replicaFallbacks = counter(
  'database_replica_fallbacks_total',
  'Reads that failed on a replica (unreachable, replica conflict) and were answered by the primary.',
  ['replica'],
);

/** GET /metrics: this process's registry in Prometheus' text format. */
export function mountMetricsRoute(router: Router): void {
  router.get('/metrics', async (ctx) => {
    ctx.type = metricsRegistry.contentType;
    ctx.body = await metricsRegistry.metrics();
  });
}
