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
    (metricsRegistry.getSingleMetric(name) as Counter<L> | undefined) ??
    new Counter({ name, help, labelNames, registers: [metricsRegistry] })
  );
}

export function gauge<L extends string>(name: string, help: string, labelNames: readonly L[]) {
  return (
    (metricsRegistry.getSingleMetric(name) as Gauge<L> | undefined) ??
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
    (metricsRegistry.getSingleMetric(name) as Histogram<L> | undefined) ??
    new Histogram({ name, help, labelNames, buckets, registers: [metricsRegistry] })
  );
}
