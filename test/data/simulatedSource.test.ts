import { describe, expect, test } from '@jest/globals';
import {
  createSimulatedMarket,
  createSimulatedSource,
} from '../../src/data/market/sources/simulated.ts';
import { shippedCurrencies } from '../../src/data/currencies/catalog.ts';

const SECONDS_PER_YEAR = 365.25 * 86_400;
const start = Date.parse('2026-03-01T12:00:00.000Z');

/** Annualised volatility of a price series sampled every `stepSeconds`. */
function realisedVolatility(prices: number[], stepSeconds: number): number {
  let sum = 0;
  for (let i = 1; i < prices.length; i++) sum += Math.log(prices[i]! / prices[i - 1]!) ** 2;
  return Math.sqrt((sum / (prices.length - 1)) * (SECONDS_PER_YEAR / stepSeconds));
}

const series = (seed: string, code: string, points: number, stepSeconds: number) => {
  const market = createSimulatedMarket(seed);
  return Array.from({ length: points }, (_, i) =>
    market.priceAt(code, new Date(start + i * stepSeconds * 1000)),
  );
};

describe('simulated market', () => {
  test('the same seed gives the same prices, in any process and any order', () => {
    const a = createSimulatedMarket('seed-1');
    const b = createSimulatedMarket('seed-1');
    const at = new Date(start);
    const later = new Date(start + 3_600_000);
    const first = [a.priceAt('BTC', at), a.priceAt('BTC', later)];
    // b asks in the other order: the path does not depend on what was asked before.
    expect([b.priceAt('BTC', later), b.priceAt('BTC', at)]).toEqual(first.reverse());
  });

  test('pricesAt gives exactly priceAt at every instant, across a segment boundary too', () => {
    const market = createSimulatedMarket('platform');
    const boundary = 2 ** 25 * 60; // an edge of the bridge's segments
    const seconds = Float64Array.from([
      ...Array.from({ length: 300 }, (_, i) => start / 1000 + i * 7),
      boundary - 3,
      boundary,
      boundary + 1,
      boundary + 20,
    ]);
    for (const code of ['BTC', 'USDT', 'ZZZ']) {
      const batch = market.pricesAt(code, seconds);
      const single = Array.from(seconds, (s) => market.priceAt(code, new Date(s * 1000)));
      expect(Array.from(batch)).toEqual(single);
    }
  });

  test('another seed gives another path', () => {
    expect(series('seed-1', 'ETH', 50, 60)).not.toEqual(series('seed-2', 'ETH', 50, 60));
  });

  test('each currency walks on its own', () => {
    const btc = series('s', 'BTC', 200, 5).map((p, i, all) => (i ? Math.log(p / all[i - 1]!) : 0));
    const eth = series('s', 'ETH', 200, 5).map((p, i, all) => (i ? Math.log(p / all[i - 1]!) : 0));
    expect(btc).not.toEqual(eth);
  });

  test('prices are positive and finite for every shipped currency, near familiar levels', () => {
    const market = createSimulatedMarket('platform');
    for (const { code } of shippedCurrencies()) {
      const price = market.priceAt(code, new Date(start));
      expect(Number.isFinite(price) && price > 0).toBe(true);
    }
    const btc = market.priceAt('BTC', new Date(start));
    expect(btc).toBeGreaterThan(20_000);
    expect(btc).toBeLessThan(400_000);
  });

  test('dollar-pegged coins stay within a fraction of a percent of 1', () => {
    for (const price of series('platform', 'USDT', 2000, 3600)) {
      expect(Math.abs(price - 1)).toBeLessThan(0.02);
    }
  });

  test.each([
    ['BTC', 5],
    ['ETH', 60],
    ['DOGE', 5],
    ['OGN', 1],
  ])('%s moves with realistic volatility at %i-second steps', (code, step) => {
    const prices = series('platform', code, 8000, step);
    const expected = createSimulatedMarket('platform').annualVolatility(code);
    expect(expected).toBeGreaterThanOrEqual(0.45);
    expect(expected).toBeLessThanOrEqual(0.9);
    // 8 000 returns estimate the volatility to within about 0.8 % (one sd); allow 5 %.
    expect(realisedVolatility(prices, step) / expected).toBeGreaterThan(0.95);
    expect(realisedVolatility(prices, step) / expected).toBeLessThan(1.05);
  });

  test('consecutive prices differ by what the volatility allows, never by jumps', () => {
    const prices = series('platform', 'SOL', 5000, 5);
    const sigma = createSimulatedMarket('platform').annualVolatility('SOL');
    const stepSigma = sigma * Math.sqrt(5 / SECONDS_PER_YEAR);
    for (let i = 1; i < prices.length; i++) {
      expect(Math.abs(Math.log(prices[i]! / prices[i - 1]!))).toBeLessThan(7 * stepSigma);
    }
  });

  test('over a year prices wander but stay within sane bounds', () => {
    const prices = series('platform', 'ETH', 366, 86_400);
    const ratio = Math.max(...prices) / Math.min(...prices);
    expect(ratio).toBeGreaterThan(1.05);
    expect(ratio).toBeLessThan(20);
  });

  test('the source prices every requested code for the requested instant', async () => {
    const source = createSimulatedSource('platform');
    const at = new Date(start);
    const prices = await source.fetchPrices({
      codes: ['BTC', 'ZZZ9'],
      at,
      deadline: Date.now() + 1000,
      signal: AbortSignal.timeout(1000),
    });
    expect(source.name).toBe('simulated');
    expect(prices.get('BTC')).toBe(createSimulatedMarket('platform').priceAt('BTC', at));
    expect(prices.get('ZZZ9')).toBeGreaterThan(0);
  });
});
