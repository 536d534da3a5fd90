import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { ExchangeClient } from '../../src/data/market/http.ts';
import { createBinanceSource } from '../../src/data/market/sources/binance.ts';
import { createCoinbaseSource } from '../../src/data/market/sources/coinbase.ts';
import { createKrakenSource } from '../../src/data/market/sources/kraken.ts';
import {
  SourceError,
  type HttpSourceOptions,
  type PriceSource,
} from '../../src/data/market/sources/types.ts';
import { fixture, startFakeExchange, type FakeExchange } from '../support/fakeExchange.ts';
import { until } from '../support/wait.ts';

let exchange: FakeExchange;

beforeAll(async () => {
  exchange = await startFakeExchange();
});
afterAll(async () => {
  await exchange.close();
});
beforeEach(() => {
  exchange.requests.length = 0;
});

interface Adapter {
  name: string;
  path: string;
  create(options: HttpSourceOptions): PriceSource;
  answer: unknown;
  /** What the fixture says, for the codes it prices. */
  expected: Record<string, number>;
}

const adapters: Adapter[] = [
  {
    name: 'coinbase',
    path: '/v2/exchange-rates',
    create: createCoinbaseSource,
    answer: fixture('coinbase-exchange-rates.json'),
    // 1 / rate, to ten significant digits
    expected: { BTC: 95012.34, ETH: 3301.17, SHIB: 0.00001312, USDT: 1.00012, '1INCH': 0.2612 },
  },
  {
    name: 'binance',
    path: '/api/v3/ticker/price',
    create: createBinanceSource,
    answer: fixture('binance-ticker-price.json'),
    // USDT books stand for dollars; USDT itself is the dollar; USDC books fill the gaps
    expected: {
      BTC: 95012.34,
      ETH: 3301.17,
      SHIB: 0.00001312,
      USDT: 1,
      USDC: 0.9998,
      ONDO: 0.9124,
    },
  },
  {
    name: 'kraken',
    path: '/0/public/Ticker',
    create: createKrakenSource,
    answer: fixture('kraken-ticker.json'),
    // last trade price; XBT is bitcoin, XDG dogecoin, legacy pairs are keyed X…Z…
    expected: { BTC: 95010.1, ETH: 3300.42, DOGE: 0.204113, SOL: 181.37, USDT: 1.00011 },
  },
];

const codes = ['BTC', 'ETH', 'SHIB', 'USDT', 'USDC', 'ONDO', '1INCH', 'DOGE', 'SOL', 'NOPE'];

function fetchWith(source: PriceSource, budgetMs = 10_000) {
  const deadline = Date.now() + budgetMs;
  return source.fetchPrices({
    codes,
    at: new Date(),
    deadline,
    signal: AbortSignal.timeout(budgetMs),
  });
}

async function failureOf(promise: Promise<unknown>): Promise<SourceError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(SourceError);
    return error as SourceError;
  }
  throw new Error('the fetch was expected to fail');
}

describe.each(adapters)('$name adapter', (adapter) => {
  const source = (options: Partial<HttpSourceOptions> = {}) =>
    adapter.create({ baseUrl: exchange.url, timeoutMs: 2000, ...options });

  test('prices the codes the exchange lists and leaves the others out', async () => {
    exchange.script(adapter.path, { body: adapter.answer });
    const prices = await fetchWith(source());
    for (const [code, price] of Object.entries(adapter.expected)) {
      expect(prices.get(code)).toBeCloseTo(price, 8);
    }
    expect(prices.has('NOPE')).toBe(false);
    expect([...prices.keys()].every((code) => codes.includes(code))).toBe(true);
    expect([...prices.values()].every((p) => Number.isFinite(p) && p > 0)).toBe(true);
    expect(exchange.requests).toHaveLength(1);
  });

  test('retries a 5xx answer and succeeds', async () => {
    exchange.script(
      adapter.path,
      { status: 503, body: 'upstream unavailable' },
      { status: 502, body: '<html>bad gateway</html>' },
      { body: adapter.answer },
    );
    const prices = await fetchWith(source());
    expect(prices.get('BTC')).toBeGreaterThan(0);
    expect(exchange.requests).toHaveLength(3);
  });

  test('gives up after its retries when the exchange keeps failing', async () => {
    exchange.script(adapter.path, { status: 500, body: { message: 'internal error' } });
    const error = await failureOf(fetchWith(source({ retries: 1 })));
    expect(error.reason).toBe('http');
    expect(exchange.requests).toHaveLength(2);
  });

  test('waits for a short Retry-After on 429, then succeeds', async () => {
    exchange.script(
      adapter.path,
      { status: 429, headers: { 'retry-after': '1' }, body: { message: 'Too many requests' } },
      { body: adapter.answer },
    );
    const started = Date.now();
    const prices = await fetchWith(source());
    expect(prices.get('BTC')).toBeGreaterThan(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(exchange.requests).toHaveLength(2);
  });

  test('a Retry-After beyond the deadline stops the source until it has passed', async () => {
    exchange.script(
      adapter.path,
      { status: 429, headers: { 'retry-after': '120' }, body: { message: 'Too many requests' } },
      { body: adapter.answer },
    );
    const subject = source();
    const started = Date.now();
    const first = await failureOf(fetchWith(subject, 3000));
    expect(first.reason).toBe('rate_limited');
    expect(Date.now() - started).toBeLessThan(2000);
    expect(exchange.requests).toHaveLength(1);
    // The exchange asked for two minutes of quiet: the next cycle does not call it.
    const second = await failureOf(fetchWith(subject, 3000));
    expect(second.reason).toBe('cooling_down');
    expect(exchange.requests).toHaveLength(1);
  });

  test('times out an exchange that does not answer, retrying once', async () => {
    exchange.script(adapter.path, { hang: true });
    const started = Date.now();
    const error = await failureOf(fetchWith(source({ timeoutMs: 300, retries: 1 })));
    expect(error.reason).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(5000);
    expect(exchange.requests).toHaveLength(2);
  });

  test('the cycle deadline bounds the whole fetch, retries included', async () => {
    exchange.script(adapter.path, { hang: true });
    const started = Date.now();
    const error = await failureOf(fetchWith(source({ timeoutMs: 5000, retries: 5 }), 600));
    expect(error.reason).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(3000);
  });

  test('a body that is not JSON is malformed and not retried', async () => {
    exchange.script(adapter.path, { body: '<html><body>Cloudflare</body></html>' });
    const error = await failureOf(fetchWith(source()));
    expect(error.reason).toBe('malformed');
    expect(exchange.requests).toHaveLength(1);
  });

  test('JSON of the wrong shape is malformed', async () => {
    exchange.script(adapter.path, { body: { data: 42, result: 'nope' } });
    const error = await failureOf(fetchWith(source()));
    expect(error.reason).toBe('malformed');
    expect(exchange.requests).toHaveLength(1);
  });

  test('an unreachable exchange is a network failure', async () => {
    const gone = await startFakeExchange();
    await gone.close();
    const error = await failureOf(fetchWith(source({ baseUrl: gone.url, retries: 1 })));
    expect(error.reason).toBe('network');
  });
});

describe('exchange specifics', () => {
  test('coinbase skips a currency whose rate is unusable and keeps the rest', async () => {
    exchange.script('/v2/exchange-rates', {
      body: {
        data: { currency: 'USD', rates: { BTC: '0', ETH: 'n/a', SOL: '0.005', DOGE: null } },
      },
    });
    const prices = await fetchWith(
      createCoinbaseSource({ baseUrl: exchange.url, timeoutMs: 2000 }),
    );
    expect([...prices.entries()]).toEqual([['SOL', 200]]);
  });

  test('binance: 418 (IP ban) is respected without a retry', async () => {
    exchange.script('/api/v3/ticker/price', {
      status: 418,
      headers: { 'retry-after': '600' },
      body: { code: -1003, msg: 'Way too much request weight used; IP banned.' },
    });
    const source = createBinanceSource({ baseUrl: exchange.url, timeoutMs: 2000 });
    expect((await failureOf(fetchWith(source))).reason).toBe('rate_limited');
    expect((await failureOf(fetchWith(source))).reason).toBe('cooling_down');
    expect(exchange.requests).toHaveLength(1);
  });

  test('kraken: a passing failure reported in the body is retried', async () => {
    exchange.script(
      '/0/public/Ticker',
      { body: { error: ['EService:Unavailable'] } },
      { body: fixture('kraken-ticker.json') },
    );
    const prices = await fetchWith(createKrakenSource({ baseUrl: exchange.url, timeoutMs: 2000 }));
    expect(prices.get('BTC')).toBe(95010.1);
    expect(exchange.requests).toHaveLength(2);
  });

  test('kraken: a rate limit reported in the body rests the source', async () => {
    exchange.script('/0/public/Ticker', { body: { error: ['EGeneral:Too many requests'] } });
    const source = createKrakenSource({ baseUrl: exchange.url, timeoutMs: 2000 });
    expect((await failureOf(fetchWith(source))).reason).toBe('rate_limited');
    expect((await failureOf(fetchWith(source))).reason).toBe('cooling_down');
    expect(exchange.requests).toHaveLength(1);
  });

  test('kraken: other errors in the body fail the source for this cycle', async () => {
    exchange.script('/0/public/Ticker', { body: { error: ['EQuery:Unknown asset pair'] } });
    const source = createKrakenSource({ baseUrl: exchange.url, timeoutMs: 2000 });
    expect((await failureOf(fetchWith(source))).reason).toBe('exchange_error');
  });
});

describe('exchange client back-off', () => {
  const call = (client: ExchangeClient, budgetMs = 3000) =>
    client.getJson(
      `${exchange.url}/flaky`,
      { signal: AbortSignal.timeout(budgetMs), deadline: Date.now() + budgetMs },
      (body) => body,
    );

  test('consecutive failures rest the exchange longer each time; a success ends the streak', async () => {
    const client = new ExchangeClient({
      source: 'flaky',
      timeoutMs: 1000,
      retries: 0,
      failureBackoffMs: 500,
    });
    // The rest running out is the point: wait for the client's own state, not a guessed time.
    const restOver = () => until(async () => client.restingUntil === 0, 30_000, 'the rest to end');
    exchange.script('/flaky', { status: 500 }, { status: 500 }, { body: { ok: true } });

    expect((await failureOf(call(client))).reason).toBe('http');
    expect((await failureOf(call(client))).reason).toBe('cooling_down'); // within 500 ms
    await restOver();
    const failedFrom = Date.now();
    expect((await failureOf(call(client))).reason).toBe('http');
    // The second failure in a row rests twice as long: 1000 ms from that failure.
    expect(client.restingUntil - failedFrom).toBeGreaterThanOrEqual(1000);
    expect(client.restingUntil - Date.now()).toBeLessThanOrEqual(1000);
    await restOver();
    expect(await call(client)).toEqual({ ok: true });
    expect(client.restingUntil).toBe(0);
    expect(exchange.requests).toHaveLength(3);
  });

  test('an answer the caller cannot use counts as a failure', async () => {
    const client = new ExchangeClient({ source: 'flaky', timeoutMs: 1000, failureBackoffMs: 500 });
    exchange.script('/flaky', { body: { surprise: true } });
    const read = () => {
      throw new SourceError('flaky', 'malformed', 'unexpected shape');
    };
    const deadline = Date.now() + 2000;
    const signal = AbortSignal.timeout(2000);
    await expect(
      client.getJson(`${exchange.url}/flaky`, { signal, deadline }, read),
    ).rejects.toThrow('unexpected shape');
    expect(client.restingUntil).toBeGreaterThan(Date.now());
  });
});
