import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { trace } from '@opentelemetry/api';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { Runner, Task } from 'graphile-worker';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { createDataService } from '../../src/data/service.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import { counter, gauge, metricsRegistry } from '../../src/shared/metrics.ts';
import { startHeartbeat, listWorkers } from '../../src/worker/heartbeat.ts';
import { enqueueJob } from '../../src/worker/jobs.ts';
import { sampleQueueDepth } from '../../src/worker/queueDepth.ts';
import { startWorkerRunner } from '../../src/worker/start.ts';
import { getJson, serve } from '../support/http.ts';
import { declaredMetrics, parseMetrics, sampleValue, type Sample } from '../support/prometheus.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { until } from '../support/wait.ts';

// Real traffic through the real stack, then /metrics read as Prometheus would: names, types and
// labels must be what the dashboard and alerts (deploy/) query.

let runtime: TestRuntime;
let server: RunningServer;
let token: string;
const spans = new InMemorySpanExporter();

beforeAll(async () => {
  trace.setGlobalTracerProvider(
    new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: spans })] }),
  );
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  token = (await createToken(runtime.pool, 'metrics-test', ['read'])).token;
  server = await serve(createDataService(runtime).app);
});

afterAll(async () => {
  await server.close();
  await runtime.dispose();
  trace.disable();
});

async function scrape(): Promise<{ text: string; samples: Sample[] }> {
  const response = await fetch(`${server.url}/metrics`);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await response.text();
  return { text, samples: parseMetrics(text) };
}

describe('HTTP metrics after real requests', () => {
  test('count and time requests by service, method, route template and status', async () => {
    expect((await getJson(`${server.url}/data/currency/all`, token)).status).toBe(200);
    expect((await getJson(`${server.url}/data/currency/history/ETH?hours=1`, token)).status).toBe(
      204,
    );
    expect((await getJson(`${server.url}/data/currency/history/NOPE`, token)).status).toBe(404);
    expect((await getJson(`${server.url}/data/currency/all`)).status).toBe(401);
    expect((await getJson(`${server.url}/no/such/path`)).status).toBe(404);

    const { samples } = await scrape();
    const count = (labels: Record<string, string>) =>
      sampleValue(samples, 'http_server_request_duration_seconds_count', labels);
    expect(
      count({ service: 'data', method: 'GET', route: '/data/currency/all', status_code: '200' }),
    ).toBe(1);
    expect(
      count({ service: 'data', method: 'GET', route: '/data/currency/all', status_code: '401' }),
    ).toBe(1);
    const history = '/data/currency/history/:code';
    expect(count({ service: 'data', method: 'GET', route: history, status_code: '204' })).toBe(1);
    expect(count({ service: 'data', method: 'GET', route: history, status_code: '404' })).toBe(1);
    // Unknown paths share one label value: raw paths would make the series unbounded.
    expect(count({ service: 'data', route: 'unmatched', status_code: '404' })).toBe(1);
    expect(samples.some((s) => s.labels.route === '/no/such/path')).toBe(false);

    const buckets = samples.filter(
      (s) =>
        s.name === 'http_server_request_duration_seconds_bucket' &&
        s.labels.route === '/data/currency/all' &&
        s.labels.status_code === '200',
    );
    expect(buckets.map((b) => b.labels.le)).toContain('+Inf');
    expect(buckets.find((b) => b.labels.le === '+Inf')?.value).toBe(1);
    expect(sampleValue(samples, 'http_server_active_requests', { service: 'data' })).toBe(1);
  });

  test('every metric of the catalogue is declared with its type from the first scrape', async () => {
    const declared = declaredMetrics((await scrape()).text);
    expect(Object.fromEntries(declared)).toMatchObject({
      http_server_request_duration_seconds: 'histogram',
      http_requests_shed_total: 'counter',
      http_shed_answer_duration_seconds: 'histogram',
      ingest_rows_inserted_total: 'counter',
      ingest_rows_duplicate_total: 'counter',
      ingest_rows_rejected_total: 'counter',
      heal_filled_candles_total: 'counter',
      heal_known_gap_candles_total: 'counter',
      heal_open_gap_candles: 'gauge',
      harvest_cycle_duration_seconds: 'histogram',
      harvest_source_last_success_timestamp_seconds: 'gauge',
      harvest_source_fetch_errors_total: 'counter',
      worker_jobs_total: 'counter',
      worker_job_duration_seconds: 'histogram',
      worker_queue_depth: 'gauge',
      rollup_lag_seconds: 'gauge',
      socketio_connected_clients: 'gauge',
      process_resident_memory_bytes: 'gauge',
    });
    // Prometheus conventions: counters end in _total, no unit other than base units.
    for (const [name, type] of declared) {
      if (type === 'counter') expect(name).toMatch(/_total$/);
      expect(name).not.toMatch(/_(milliseconds|ms|minutes|kilobytes|megabytes)(_|$)/);
    }
  });

  test('a module redefining a catalogue metric with other labels fails loudly', () => {
    expect(counter('worker_jobs_total', 'again', ['task', 'outcome'])).toBe(
      metricsRegistry.getSingleMetric('worker_jobs_total'),
    );
    expect(() => counter('worker_jobs_total', 'again', ['task'])).toThrow(/already a counter/);
    expect(() => gauge('worker_jobs_total', 'again', ['task', 'outcome'])).toThrow(
      /cannot also be a gauge/,
    );
  });
});

describe('worker metrics and spans after real jobs', () => {
  let runner: Runner;
  const tasks: Record<string, Task> = {
    ops_metrics_ok: async () => {
      await sleep(5); // deliberate: the job must take measurable time for its duration metric
    },
    ops_metrics_fail: async () => {
      throw new Error('exchange answered 502');
    },
  };

  beforeAll(async () => {
    runner = await startWorkerRunner(runtime, { taskList: tasks, concurrency: 2 });
  });

  afterAll(async () => {
    await runner.stop();
  });

  const jobsLeft = z.object({ ok: z.number(), failedOnce: z.number() });

  test('count jobs by task and outcome, time them, and trace each one', async () => {
    await enqueueJob(runtime.pool, 'ops_metrics_ok', {});
    await enqueueJob(runtime.pool, 'ops_metrics_ok', {});
    await enqueueJob(runtime.pool, 'ops_metrics_fail', {}, { maxAttempts: 1 });
    await until(
      async () => {
        const left = await runtime.pool.one(sql.type(jobsLeft)`
          SELECT count(*) FILTER (WHERE task_identifier = 'ops_metrics_ok')::int AS ok,
                 count(*) FILTER (WHERE task_identifier = 'ops_metrics_fail' AND attempts = 1
                                    AND locked_at IS NULL)::int AS "failedOnce"
          FROM graphile_worker.jobs
        `);
        return left.ok === 0 && left.failedOnce === 1;
      },
      60_000,
      'the jobs to run',
    );
    const { samples } = await scrape();
    expect(
      sampleValue(samples, 'worker_jobs_total', { task: 'ops_metrics_ok', outcome: 'success' }),
    ).toBe(2);
    expect(
      sampleValue(samples, 'worker_jobs_total', { task: 'ops_metrics_fail', outcome: 'failure' }),
    ).toBe(1);
    expect(
      sampleValue(samples, 'worker_job_duration_seconds_count', { task: 'ops_metrics_ok' }),
    ).toBe(2);
    expect(
      sampleValue(samples, 'worker_job_duration_seconds_sum', { task: 'ops_metrics_ok' }),
    ).toBeGreaterThan(0.005);

    const finished = spans.getFinishedSpans();
    const ok = finished.filter((s) => s.name === 'job ops_metrics_ok');
    const failed = finished.find((s) => s.name === 'job ops_metrics_fail')!;
    expect(ok).toHaveLength(2);
    expect(ok[0]!.attributes).toMatchObject({ 'job.task': 'ops_metrics_ok', 'job.attempt': 1 });
    expect(failed.status).toMatchObject({ code: 2, message: 'exchange answered 502' });
    expect(failed.events.map((e) => e.name)).toContain('exception');
  });

  test('the queue depth gauge counts the shared queue by state', async () => {
    await enqueueJob(
      runtime.pool,
      'ops_metrics_ok',
      {},
      { runAt: new Date(Date.now() + 3_600_000) },
    );
    const depth = await sampleQueueDepth(runtime.pool);
    expect(depth).toMatchObject({ scheduled: 1, failed: 1, running: 0 });
    const { samples } = await scrape();
    expect(sampleValue(samples, 'worker_queue_depth', { state: 'scheduled' })).toBe(1);
    expect(sampleValue(samples, 'worker_queue_depth', { state: 'failed' })).toBe(1);
    expect(sampleValue(samples, 'worker_queue_depth', { state: 'ready' })).toBe(0);
  });
});

describe('worker heartbeat', () => {
  test('a running worker is listed live; a stopped one removes itself', async () => {
    const heartbeat = await startHeartbeat(runtime.pool, runtime.logger, 200);
    const before = (await listWorkers(runtime.pool)).find((w) => w.workerId === heartbeat.workerId);
    expect(before).toMatchObject({ live: true, pid: process.pid });
    const lastSeen = async () =>
      (await listWorkers(runtime.pool)).find((w) => w.workerId === heartbeat.workerId)!.lastSeenAt;
    await until(
      async () => (await lastSeen()).getTime() > before!.lastSeenAt.getTime(),
      30_000,
      'a later heartbeat',
    );
    await expect(heartbeat.check()).resolves.toBeUndefined();
    await heartbeat.stop();
    expect((await listWorkers(runtime.pool)).map((w) => w.workerId)).not.toContain(
      heartbeat.workerId,
    );
  });
});
