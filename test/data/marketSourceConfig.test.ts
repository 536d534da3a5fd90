import { describe, expect, test } from '@jest/globals';
import { createPriceSources, marketSourceNames } from '../../src/data/market/sources/index.ts';
import { ConfigError, loadConfig } from '../../src/shared/config.ts';

describe('MARKET_SOURCE', () => {
  test('defaults to the offline simulated market', () => {
    const config = loadConfig({});
    expect(createPriceSources(config).map((s) => s.name)).toEqual(['simulated']);
  });

  test('lists sources in order of preference, each once', () => {
    const config = loadConfig({ MARKET_SOURCE: 'kraken,coinbase,kraken,simulated' });
    expect(marketSourceNames(config)).toEqual(['kraken', 'coinbase', 'kraken', 'simulated']);
    expect(createPriceSources(config).map((s) => s.name)).toEqual([
      'kraken',
      'coinbase',
      'simulated',
    ]);
  });

  test.each(['nasdaq', 'simulated,,coinbase', 'Coinbase', 'simulated, binance'])(
    'rejects %j with a message naming the variable',
    (value) => {
      expect(() => loadConfig({ MARKET_SOURCE: value })).toThrow(ConfigError);
      try {
        loadConfig({ MARKET_SOURCE: value });
      } catch (error) {
        expect((error as ConfigError).problems.join('\n')).toMatch(/^MARKET_SOURCE: /m);
      }
    },
  );

  test('exchange base URLs and the request time-out are configurable', () => {
    const config = loadConfig({
      COINBASE_API_URL: 'http://127.0.0.1:9/',
      MARKET_REQUEST_TIMEOUT_MS: '250',
    });
    expect(config.COINBASE_API_URL).toBe('http://127.0.0.1:9/');
    expect(config.MARKET_REQUEST_TIMEOUT_MS).toBe(250);
    expect(() => loadConfig({ KRAKEN_API_URL: 'not a url' })).toThrow(ConfigError);
    expect(() => loadConfig({ MARKET_REQUEST_TIMEOUT_MS: '0' })).toThrow(ConfigError);
  });
});
