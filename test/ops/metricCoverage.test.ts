import { afterAll, beforeAll, expect, jest, test } from '@jest/globals';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'slonik';
import { parse } from 'yaml';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { enqueueJob } from '../../src/worker/jobs.ts';
import { PLATFORM_BIN, runCli, waitForExit } from '../support/cli.ts';
import { connectTrader, type TraderClient } from '../support/live.ts';
import { parseMetrics, type Sample } from '../support/prometheus.ts';
import { readPromql } from '../support/promql.ts';
import { replicaUnsupported, replicaUrl, testReplica } from '../support/replica.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { until } from '../support/wait.ts';

// Everything an operator looks at must be true: every metric an alert rule or a Grafana panel
// reads has samples once each role has done its work. The roles run as `platform start --role …`
// processes, each scraped on its own /metrics as Prometheus would; the backfill runs as the CLI
// process nobody scrapes. A metric declared but never set, or set only in a process Prometheus
// does not scrape, fails here. The data role reads through a real streaming replica of the test
// server (READ_DATABASE_URL), as in compose, so the replica panels and alert are checked too;
// where no replica can be made (not root on Debian) only those metrics are let off, and it says so.

jest.setTimeout(240_000);

const ROOT = new URL('../../', import.meta.url).pathname;
type Role = 'data' | 'api' | 'worker';
/** Metrics only a data module with a read replica sets. */
const REPLICA_METRICS = /^database_replica_/;
const noReplica = replicaUnsupported();
if (noReplica) process.stderr.write(`\nreplica metrics not checked: ${noReplica}\n`);

/** Metric names the alert rules and dashboard panels select (`up` is Prometheus's own). */
function watchedMetrics(): string[] {
  const alerts = parse(readFileSync(join(ROOT, 'deploy/prometheus/alerts.yml'), 'utf8'));
  const exprs: string[] = alerts.groups.flatMap((g: { rules: Array<{ expr?: string }> }) =>
    g.rules.flatMap((r) => (r.expr ? [r.expr] : [])),
  );
  const dashboard = JSON.parse(
    readFileSync(join(ROOT, 'deploy/grafana/dashboards/platform.json'), 'utf8'),
  );
  const panels = (list: any[]): any[] => list.flatMap((p) => [p, ...panels(p.panels ?? [])]);
  for (const panel of panels(dashboard.panels)) {
    for (const target of panel.targets ?? []) exprs.push(String(target.expr));
  }
  const names = exprs.flatMap((expr) => readPromql(expr).selectors.map((s) => s.metric));
  return [...new Set(names)].filter((name) => name !== 'up').sort();
}

/** `count` distinct free ports: all held open at once, then released. */
async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  const ports = await Promise.all(
    servers.map(
      (server) =>
        new Promise<number>((resolve, reject) => {
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
        }),
    ),
  );
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

interface RoleProcess {
  url: string;
  /** Where the role's /metrics is: its own port (data) or its ops listener (API, worker). */
  metricsUrl: string;
  child: ChildProcessWithoutNullStreams;
  output: () => string;
}

let runtime: TestRuntime;
let dir: string;
const roles = {} as Record<Role, RoleProcess>;
let trader: TraderClient | undefined;

async function startRole(
  role: Role,
  env: Record<string, string>,
  port: number,
  metricsPort = port,
) {
  const child = spawn(process.execPath, [PLATFORM_BIN, 'start', '--role', role], {
    env: {
      ...process.env,
      LOG_LEVEL: 'warn',
      DATABASE_URL: runtime.database.url,
      HOST: '127.0.0.1',
      PLATFORM_LOAD_CURRENCIES: 'false',
      SESSION_KEYS: 'a-session-key-of-at-least-thirty-two-characters',
      ...env,
    },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const started: RoleProcess = {
    url: `http://127.0.0.1:${port}`,
    metricsUrl: `http://127.0.0.1:${metricsPort}`,
    child,
    output: () => output,
  };
  roles[role] = started;
  await until(
    async () => {
      if (child.exitCode !== null) throw new Error(`${role} exited early:\n${output}`);
      return fetch(`${started.metricsUrl}/health/live`).then(
        (r) => r.ok,
        () => false,
      );
    },
    90_000,
    `the ${role} role to listen`,
  );
}

async function scrape(role: Role): Promise<Sample[]> {
  const response = await fetch(`${roles[role].metricsUrl}/metrics`);
  expect(response.status).toBe(200);
  return parseMetrics(await response.text());
}

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  const { token } = await createToken(runtime.pool, 'metric-coverage', ['read']);
  dir = await mkdtemp(join(tmpdir(), 'metric-coverage-'));
  const readReplica: Record<string, string> = noReplica
    ? {}
    : { READ_DATABASE_URL: replicaUrl(await testReplica(), runtime.database.name) };
  const [dataPort = 0, apiPort = 0, apiOpsPort = 0, workerPort = 0] = await freePorts(4);
  await Promise.all([
    startRole('data', { DATA_PORT: String(dataPort), DATA_TOKEN: token, ...readReplica }, dataPort),
    startRole(
      'api',
      {
        API_PORT: String(apiPort),
        WORKER_METRICS_PORT: String(apiOpsPort),
        DATA_URL: `http://127.0.0.1:${dataPort}`,
        DATA_TOKEN: token,
        API_RATE_LIMIT_ANONYMOUS: '1',
      },
      apiPort,
      apiOpsPort,
    ),
    startRole(
      'worker',
      { WORKER_METRICS_PORT: String(workerPort), HARVEST_INTERVAL_SECONDS: '1' },
      workerPort,
    ),
  ]);
  // The replica is made once per test run (a copy of the whole test server): time for that.
}, 660_000);

afterAll(async () => {
  trader?.close();
  await Promise.all(
    Object.values(roles).map(async ({ child }) => {
      child.kill('SIGTERM');
      await waitForExit(child);
    }),
  );
  await rm(dir, { recursive: true, force: true });
  await runtime.dispose();
});

test('every metric the alerts and dashboards read has samples once each role has worked', async () => {
  const watched = watchedMetrics();
  expect(watched).toEqual(
    expect.arrayContaining([
      'rollup_lag_seconds',
      'socketio_connected_clients',
      'ingest_rows_inserted_total',
      'harvest_source_last_success_timestamp_seconds',
      'database_replica_lag_seconds',
      'database_replica_in_use',
      'database_routed_reads_total',
    ]),
  );

  // A backfill, in its own short-lived process that nothing scrapes.
  // Recent minutes: the refresh below has little to materialise.
  const file = join(dir, 'ticks.csv');
  const minute = (ago: number) =>
    new Date(Math.floor(Date.now() / 60_000) * 60_000 - ago * 60_000).toISOString();
  await writeFile(
    file,
    `time,code,price\n${minute(30)},ETH,3400\n${minute(29)},ETH,3401\n${minute(28)},ETH,x\n`,
  );
  const backfill = await runCli(['backfill', file], { DATABASE_URL: runtime.database.url });
  expect(backfill.stdout + backfill.stderr).toMatch(/inserted\s+2/);
  const unit = await runtime.pool.one(
    sql.type(z.object({ source: z.string() }))`SELECT source FROM ingest_units`,
  );

  // A Socket.IO client stays connected to the API while it is scraped; a request to each service.
  trader = await connectTrader(roles.api.url);
  expect((await fetch(`${roles.api.url}/api/currency/all`)).status).toBe(200);
  // Past the anonymous history limit (1 a minute here) a request is refused (shed).
  const history = `${roles.api.url}/api/currency/history/BTC?hours=1&intervalSeconds=60`;
  await (await fetch(history)).arrayBuffer();
  expect((await fetch(history)).status).toBe(429);

  // A rollup refresh now, rather than at the worker's next minute.
  await enqueueJob(runtime.pool, 'refresh_rollups', {});

  const samples = {} as Record<Role, Sample[]>;
  const has = (role: Role, name: string, labels: Record<string, string> = {}) =>
    (samples[role] ?? []).some(
      (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
    );
  const required = noReplica ? watched.filter((name) => !REPLICA_METRICS.test(name)) : watched;
  const missing = () =>
    required.filter((name) => !(['data', 'api', 'worker'] as const).some((r) => has(r, name)));
  // The worker harvests every second and the refresh job is queued: wait for both to have run.
  await until(
    async () => {
      for (const role of ['data', 'api', 'worker'] as const) samples[role] = await scrape(role);
      return (
        missing().length === 0 &&
        has('worker', 'worker_jobs_total', { task: 'refresh_rollups', outcome: 'success' })
      );
    },
    120_000,
    'every watched metric to have samples',
  ).catch((error: unknown) => {
    const outputs = Object.entries(roles).map(([role, p]) => `--- ${role}:\n${p.output()}`);
    throw new Error(
      `${(error as Error).message}; still without samples: ${missing().join(', ')}\n${outputs.join('\n')}`,
    );
  });

  // Each where its owner serves it.
  expect(samples.data.find((s) => s.name === 'ingest_rows_inserted_total')).toBeDefined();
  const loaded = samples.data.find(
    (s) => s.name === 'ingest_rows_inserted_total' && s.labels.source === unit.source,
  );
  expect(loaded?.value).toBe(2);
  const rejected = samples.data.find(
    (s) => s.name === 'ingest_rows_rejected_total' && s.labels.source === unit.source,
  );
  expect(rejected?.value).toBe(1);
  const clients = samples.api.find(
    (s) => s.name === 'socketio_connected_clients' && s.labels.namespace === '/trader',
  );
  expect(clients?.value).toBe(1);
  const lag = samples.worker.filter((s) => s.name === 'rollup_lag_seconds');
  expect(lag.map((s) => s.labels.level).sort()).toEqual([
    '15m',
    '1d',
    '1h',
    '1h_at15',
    '1h_at30',
    '5m',
  ]);
  for (const sample of lag) expect(sample.value).toBeGreaterThanOrEqual(0);
  expect(has('worker', 'harvest_source_last_success_timestamp_seconds')).toBe(true);
  expect(has('data', 'http_server_request_duration_seconds_count', { service: 'data' })).toBe(true);
  expect(has('api', 'http_server_request_duration_seconds_count', { service: 'api' })).toBe(true);

  // The client gone, the API says so at the next scrape.
  trader.close();
  trader = undefined;
  await until(
    async () =>
      (await scrape('api')).find((s) => s.name === 'socketio_connected_clients')?.value === 0,
    30_000,
    'the connected-clients gauge to drop to 0',
  );
});
