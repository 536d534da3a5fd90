import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ApiClient } from '../support/apiClient.ts';
import { setSnapshot } from '../support/prices.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

// `platform start --role all` on ephemeral ports: the API must find the in-process data module
// and call it with the token the start command made.

const BIN = fileURLToPath(new URL('../../bin/platform.mjs', import.meta.url));
let runtime: TestRuntime;
let child: ChildProcess;
let output = '';

function startPlatform(args: string[], env: Record<string, string>): ChildProcess {
  const started = spawn(process.execPath, [BIN, 'start', ...args], {
    env: {
      ...process.env,
      DATABASE_URL: runtime.database.url,
      HOST: '127.0.0.1',
      DATA_PORT: '0',
      API_PORT: '0',
      DATA_URL: '',
      DATA_TOKEN: '',
      PLATFORM_LOAD_CURRENCIES: 'false',
      LOG_LEVEL: 'warn',
      SESSION_KEYS: 'a-session-key-of-at-least-thirty-two-characters',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  started.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return started;
}

async function stop(process: ChildProcess) {
  if (process.exitCode !== null) return;
  const exited = new Promise((resolve) => process.once('exit', resolve));
  process.kill('SIGTERM');
  await exited;
}

function waitFor(pattern: RegExp, ms: number): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${pattern} in:\n${output}`)), ms);
    const check = () => {
      const match = pattern.exec(output);
      if (match) {
        clearTimeout(timer);
        child.stdout?.off('data', check);
        resolve(match);
      }
    };
    child.stdout?.on('data', check);
    check();
  });
}

beforeAll(async () => {
  runtime = await createTestRuntime();
  child = startPlatform(['--role', 'all'], {});
  await waitFor(/platform is running/, 60_000);
}, 90_000);

afterAll(async () => {
  await stop(child);
  await runtime.dispose();
});

test('the API role runs beside the data role and reaches it with the local token', async () => {
  const api = /\n\s+api\s+(http:\/\/\S+)/.exec(output)?.[1];
  const data = /\n\s+data\s+(http:\/\/\S+)/.exec(output)?.[1];
  expect(api).toBeDefined();
  expect(data).toBeDefined();
  expect(output).toMatch(/data token \(read, write; replaced at every start\): pdt_/);
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
});

test('--role api --profile docs serves the reference without any data module', async () => {
  output = '';
  const docs = startPlatform(['--role', 'api', '--profile', 'docs'], {
    DATA_URL: 'http://127.0.0.1:9',
  });
  const previous = child;
  child = docs;
  try {
    const api = (await waitFor(/\n\s+api\s+(http:\/\/\S+)/, 60_000))[1]!;
    const client = new ApiClient(api);
    expect((await client.get('/health/ready')).status).toBe(200);
    expect(
      (await client.post('/api/currency/value', { currencyCode: 'BTC', shares: 1 })).status,
    ).toBe(404);
    expect((await client.get('/openapi.json')).body.paths['/api/portfolio/get']).toBeDefined();
  } finally {
    await stop(docs);
    child = previous;
  }
}, 90_000);
