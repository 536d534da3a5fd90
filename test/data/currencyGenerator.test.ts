import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { shippedCurrencies } from '../../src/data/currencies/catalog.ts';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

let runtime: TestRuntime;
let exchange: http.Server;
let exchangeUrl: string;

// What Coinbase's /v2/currencies/crypto answers, trimmed to a few entries.
const coinbaseBody = {
  data: [
    {
      asset_id: '5b71fc48-3dd3-540c-809b-f8c94d0e68b5',
      code: 'BTC',
      name: 'Bitcoin',
      color: '#F7931A',
      sort_index: 100,
      exponent: 8,
      type: 'crypto',
    },
    {
      asset_id: 'd85dce9b-5b73-5c3c-8978-522ce1d1c1b4',
      code: 'ETH',
      name: 'Ethereum (renamed upstream)',
      color: '#627EEA',
      sort_index: 102,
      exponent: 8,
      type: 'crypto',
    },
    {
      asset_id: 'a2a8f5ae-83a6-542e-9064-7d335ae8a58d',
      code: 'NEWC',
      name: 'New Coin',
      color: '#000000',
      sort_index: 900,
      exponent: 8,
      type: 'crypto',
    },
    {
      asset_id: 'x',
      code: 'bad code!',
      name: 'Broken',
      color: '#000',
      sort_index: 1,
      exponent: 8,
      type: 'crypto',
    },
  ],
};

beforeAll(async () => {
  runtime = await createTestRuntime();
  exchange = http.createServer((req, res) => {
    if (req.url === '/v2/currencies/crypto') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(coinbaseBody));
    } else {
      res.writeHead(503).end();
    }
  });
  await new Promise<void>((resolve) => exchange.listen(0, '127.0.0.1', resolve));
  exchangeUrl = `http://127.0.0.1:${(exchange.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => exchange.close(resolve));
  await runtime.dispose();
});

const count = () => runtime.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM currencies`);

test('the shipped list has at least 100 real currencies with names', () => {
  const list = shippedCurrencies();
  expect(list.length).toBeGreaterThanOrEqual(100);
  expect(list.slice(0, 2)).toEqual([
    { code: 'BTC', name: 'Bitcoin' },
    { code: 'ETH', name: 'Ethereum' },
  ]);
  expect(new Set(list.map((c) => c.code)).size).toBe(list.length);
});

test('switched off, the generator installs the shipped list only', async () => {
  const result = await generateCurrencies({
    pool: runtime.pool,
    logger: runtime.logger,
    loadFromExchange: false,
  });
  expect(result).toEqual({ shipped: shippedCurrencies().length, fromExchange: null });
  expect(await count()).toBe(shippedCurrencies().length);
});

test('switched on, it adds what the exchange lists and keeps the curated names', async () => {
  const result = await generateCurrencies({
    pool: runtime.pool,
    logger: runtime.logger,
    loadFromExchange: true,
    url: `${exchangeUrl}/v2/currencies/crypto`,
  });
  expect(result.fromExchange).toBe(3);
  const rows = await runtime.pool.any(
    sql.unsafe`SELECT code, name FROM currencies WHERE code IN ('ETH', 'NEWC') ORDER BY code`,
  );
  expect(rows).toEqual([
    { code: 'ETH', name: 'Ethereum' },
    { code: 'NEWC', name: 'New Coin' },
  ]);
});

test('without network it serves the shipped list with one warning, never a crash', async () => {
  const lines: string[] = [];
  const logger = createLogger('warn', { write: (line: string) => void lines.push(line) });
  const result = await generateCurrencies({
    pool: runtime.pool,
    logger,
    loadFromExchange: true,
    url: 'http://127.0.0.1:1/v2/currencies/crypto',
    timeoutMs: 1000,
  });
  expect(result.fromExchange).toBeNull();
  expect(lines).toHaveLength(1);
  expect(JSON.parse(lines[0]!).msg).toMatch(/shipped list/);
});
