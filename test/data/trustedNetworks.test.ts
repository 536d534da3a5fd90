import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { createDataService } from '../../src/data/service.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import { getJson, serve } from '../support/http.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

let runtime: TestRuntime;
let server: RunningServer;

beforeAll(async () => {
  runtime = await createTestRuntime({ DATA_TRUSTED_NETWORKS: '10.0.0.0/8, 127.0.0.0/8' });
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  server = await serve(createDataService(runtime).app);
});

afterAll(async () => {
  await server.close();
  await runtime.dispose();
});

test('callers from a trusted network pass without a token', async () => {
  const { status, body } = await getJson(`${server.url}/data/currency/all`);
  expect(status).toBe(200);
  expect(body).toEqual({ currencies: [] });
});

test('a presented token is still checked, even from a trusted network', async () => {
  const { status } = await getJson(`${server.url}/data/currency/all`, 'pdt_wrong');
  expect(status).toBe(401);
});
