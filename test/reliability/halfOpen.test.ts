import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { createDataService } from '../../src/data/service.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { createApiService } from '../../src/api/service.ts';
import { loadConfig } from '../../src/shared/config.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { createRuntime, type Runtime } from '../../src/shared/runtime.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import { TEST_SESSION_KEY } from '../support/api.ts';
import { ApiClient, newAccount } from '../support/apiClient.ts';
import { getJson, serve } from '../support/http.ts';
import { setSnapshot } from '../support/prices.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { startTcpProxy, type TcpProxy } from './tcpProxy.ts';
import { until } from '../support/wait.ts';

// A half-open connection between the services and PostgreSQL: a proxy that keeps every
// connection open but stops forwarding bytes. Neither side sees an error; without client-side
// time-outs a request would hang for as long as TCP takes to give up (many minutes). Here every
// request must end with a 503 in the contract's shape within a bounded time, and the services
// must serve again once the link is back.

const BOUND_MS = 12_000;

let setup: TestRuntime;
let proxy: TcpProxy;
let runtime: Runtime;
let data: RunningServer;
let api: RunningServer;
let token: string;
let account: ReturnType<typeof newAccount>;

beforeAll(async () => {
  setup = await createTestRuntime();
  await generateCurrencies({ pool: setup.pool, logger: setup.logger, loadFromExchange: false });
  await setSnapshot(setup.pool, 'BTC', 100, new Date());
  ({ token } = await createToken(setup.pool, 'half-open', ['read', 'write']));

  const url = new URL(setup.database.url);
  proxy = await startTcpProxy(Number(url.port || 5432), url.hostname);
  url.port = String(proxy.port);
  const config = loadConfig({
    PLATFORM_LOAD_CURRENCIES: 'false',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DATABASE_URL: url.toString(),
    SESSION_KEYS: TEST_SESSION_KEY,
    DATA_CACHE_MS: '0',
    DATABASE_STATEMENT_TIMEOUT_MS: '2000',
    DATABASE_CONNECT_TIMEOUT_MS: '2000',
    REQUEST_TIMEOUT_MS: '6000',
    DATA_TIMEOUT_MS: '8000',
  });
  runtime = await createRuntime(config, createLogger(config.LOG_LEVEL));
  data = await serve(createDataService(runtime).app);
  api = await serve(createApiService(runtime, { dataUrl: data.url, dataToken: token }).app);
  account = newAccount('halfopen');
  const signup = await new ApiClient(api.url).post('/api/authorize/signup', account);
  expect(signup.status).toBe(200);
}, 60_000);

afterAll(async () => {
  await Promise.all([api?.close(1000), data?.close(1000)]);
  await proxy?.close();
  await runtime?.close();
  await setup?.dispose();
});

/** The request, timed; it must end (no hang) within BOUND_MS. */
async function timed<T>(request: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = Date.now();
  const result = await Promise.race([
    request(),
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`no answer within ${BOUND_MS} ms`)), BOUND_MS).unref(),
    ),
  ]);
  return { result, ms: Date.now() - started };
}

function expectUnavailable(response: { status: number; body: any }) {
  expect(response.status).toBe(503);
  expect(response.body.error).toEqual({
    code: 'dependency_unavailable',
    message: expect.any(String),
    details: [],
  });
}

test('requests end with 503 within a bounded time while the link is a black hole, then recover', async () => {
  const dataGet = (path: string) => getJson(`${data.url}${path}`, token);
  expect((await dataGet('/data/currency/all')).status).toBe(200);
  const client = new ApiClient(api.url);
  expect(
    (
      await client.post('/api/authorize/login', {
        email: account.email,
        password: account.password,
      })
    ).status,
  ).toBe(200);
  expect((await client.get('/api/portfolio/get')).status).toBe(200);

  proxy.blackHole();
  try {
    const answers = await Promise.all([
      timed(() => dataGet('/data/currency/all')),
      timed(() => dataGet('/data/currency/history/BTC?hours=1')),
      timed(() =>
        getJson(`${data.url}/data/predictions/add`, token, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ currency: 'BTC' }),
        }),
      ),
      timed(() => client.get('/api/portfolio/get')),
      timed(() => client.get('/api/authorize/isloggedin')),
      timed(() =>
        new ApiClient(api.url).post('/api/authorize/login', {
          email: account.email,
          password: account.password,
        }),
      ),
    ]);
    // The snapshot may still come from the copy kept on the change listener's word while that
    // word is fresh (the listener's last round trip within two ping intervals); once the silent
    // link makes it stale, the copy is no longer served and the route answers 503.
    if (answers[0].result.status !== 200) expectUnavailable(answers[0].result);
    expectUnavailable(answers[1].result);
    let snapshot = answers[0].result;
    await until(
      async () =>
        (snapshot = (await timed(() => dataGet('/data/currency/all'))).result).status !== 200,
      BOUND_MS,
      'the kept snapshot to stop being served over a silent link',
    );
    expectUnavailable(snapshot);
    // The invalid write is rejected before it needs the database, or answers 503: never a hang.
    expect([400, 503]).toContain(answers[2].result.status);
    for (const { result } of answers.slice(3)) {
      if (result.status !== 503)
        throw new Error(`expected 503, got ${result.status} ${result.text}`);
      expect(result.body.error.code).toBe('dependency_unavailable');
    }
    const ready = await timed(() => getJson(`${data.url}/health/ready`));
    expect(ready.result.status).toBe(503);
    expect((await getJson(`${data.url}/health/live`)).status).toBe(200);
  } finally {
    proxy.heal();
  }

  // The link is back: fresh connections replace the dead ones, without a restart.
  await until(
    async () => (await dataGet('/data/currency/all')).status === 200,
    20_000,
    'the data module',
  );
  await until(
    async () => (await client.get('/api/portfolio/get')).status === 200,
    20_000,
    'the API',
  );
  expect((await getJson(`${data.url}/health/ready`)).status).toBe(200);
}, 90_000);
