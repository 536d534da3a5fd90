import { afterAll, beforeAll, expect, test } from '@jest/globals';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { ApiClient } from '../support/apiClient.ts';
import { spawnCli, waitForExit } from '../support/cli.ts';
import { setSnapshot } from '../support/prices.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

// `platform start` with the API role, on ephemeral ports: in `--role all` the API must find the
// in-process data module and call it with the token the start command made.

let runtime: TestRuntime;

beforeAll(async () => {
  runtime = await createTestRuntime();
});

afterAll(async () => {
  await runtime.dispose();
});

function env(extra: Record<string, string> = {}) {
  return {
    DATABASE_URL: runtime.database.url,
    HOST: '127.0.0.1',
    DATA_PORT: '0',
    API_PORT: '0',
    WORKER_METRICS_PORT: '0',
    DATA_URL: '',
    DATA_TOKEN: '',
    PLATFORM_LOAD_CURRENCIES: 'false',
    SESSION_KEYS: 'a-session-key-of-at-least-thirty-two-characters',
    ...extra,
  };
}

async function stop(child: ChildProcessWithoutNullStreams) {
  child.kill('SIGTERM');
  await waitForExit(child);
}

const listening = (output: string, role: string) =>
  new RegExp(`\\n\\s+${role}\\s+(http://\\S+)`).exec(output)?.[1];

test('--role all: the API reaches the in-process data module with the local token', async () => {
  const { child, output } = await spawnCli(
    ['start', '--role', 'all'],
    env(),
    /platform is running[\s\S]*data token[^\n]*\n[^\n]*\n/,
    60_000,
  );
  try {
    const api = listening(output(), 'api');
    const data = listening(output(), 'data');
    expect(data).toBeDefined();
    // One process: the data port serves its /metrics (the API's included), the public port none.
    expect(listening(output(), 'ops')).toBeUndefined();
    expect((await new ApiClient(api!).get('/metrics')).status).toBe(404);
    const metrics = await new ApiClient(data!).get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.text).toContain('api_login_attempts_total');
    // Not a terminal: the token the API uses stays out of the output.
    expect(output()).toMatch(/data token: not shown/);
    expect(output()).not.toMatch(/pdt_/);
    const client = new ApiClient(api!);
    const ready = await client.get('/health/ready');
    expect(ready.body).toEqual({
      status: 'UP',
      checks: { database: 'ok', migrations: 'ok', dataModule: 'ok' },
    });
    await setSnapshot(runtime.pool, 'BTC', 50, new Date());
    const value = await client.post('/api/currency/value', { currencyCode: 'BTC', shares: 3 });
    expect(value.status).toBe(200);
    expect(value.body).toEqual({ value: 150 });
  } finally {
    await stop(child);
  }
}, 90_000);

test('--role api --profile docs serves the reference without any data module', async () => {
  const { child, output } = await spawnCli(
    ['start', '--role', 'api', '--profile', 'docs'],
    env({ DATA_URL: 'http://127.0.0.1:9' }),
    /platform is running[\s\S]*\n\s+api\s+http:\/\/\S+\n/,
    60_000,
  );
  try {
    const client = new ApiClient(listening(output(), 'api')!);
    expect((await client.get('/health/ready')).status).toBe(200);
    const value = await client.post('/api/currency/value', { currencyCode: 'BTC', shares: 1 });
    expect(value.status).toBe(404);
    expect((await client.get('/openapi.json')).body.paths['/api/portfolio/get']).toBeDefined();
    // The public port serves no metrics; the ops listener beside it does, the API's included.
    expect((await client.get('/metrics')).status).toBe(404);
    const ops = new ApiClient(listening(output(), 'ops')!);
    const metrics = await ops.get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(/http_server_request_duration_seconds_count\{[^}]*service="api"/);
    expect((await ops.get('/health/ready')).status).toBe(200);
  } finally {
    await stop(child);
  }
}, 90_000);

const printedToken = (output: string) => /data token \([^)]*\): (pdt_\S+)/.exec(output)?.[1];

test('a second --role data start without DATA_TOKEN leaves the first instance its token', async () => {
  // On a terminal, where the token is printed.
  const ready = /platform is running[\s\S]*data token[^\n]*\n/;
  const terminal = { terminal: true };
  const first = await spawnCli(['start', '--role', 'data'], env(), ready, 60_000, terminal);
  try {
    const second = await spawnCli(['start', '--role', 'data'], env(), ready, 60_000, terminal);
    try {
      const [firstToken, secondToken] = [
        printedToken(first.output()),
        printedToken(second.output()),
      ];
      expect(firstToken).toBeDefined();
      expect(secondToken).not.toEqual(firstToken);
      for (const [output, token] of [
        [first.output(), firstToken],
        [second.output(), secondToken],
      ]) {
        const answer = await fetch(`${listening(output!, 'data')!}/data/currency/all?limit=1`, {
          headers: { authorization: `Bearer ${token!}` },
        });
        expect(answer.status).toBe(200);
      }
    } finally {
      await stop(second.child);
    }
  } finally {
    await stop(first.child);
  }
}, 120_000);
