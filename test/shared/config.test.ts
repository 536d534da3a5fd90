import { expect, test } from '@jest/globals';
import { ConfigError, loadConfig } from '../../src/shared/config.ts';

test('defaults follow the contract', () => {
  const config = loadConfig({});
  expect(config.DATA_PORT).toBe(8085);
  expect(config.API_PORT).toBe(8080);
  expect(config.HARVEST_INTERVAL_SECONDS).toBe(5);
  expect(config.MARKET_SOURCE).toBe('simulated');
  expect(config.PLATFORM_LOAD_CURRENCIES).toBe(true);
  expect(new URL(config.DATABASE_URL).pathname).toBe('/platform');
  expect(new URL(config.DATABASE_URL).username).not.toBe('');
});

test('bad configuration is refused with one message listing every problem', () => {
  let caught: unknown;
  try {
    loadConfig({
      DATA_PORT: 'eighty',
      HARVEST_INTERVAL_SECONDS: '0',
      DATA_TRUSTED_NETWORKS: '10.0.0.0/99',
      LOG_LEVEL: 'loud',
    });
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(ConfigError);
  const { problems, message } = caught as ConfigError;
  expect(problems.map((p) => p.split(':')[0]!.split('.')[0]).sort()).toEqual(
    ['DATA_PORT', 'DATA_TRUSTED_NETWORKS', 'HARVEST_INTERVAL_SECONDS', 'LOG_LEVEL'].sort(),
  );
  expect(message).toContain('DATA_PORT');
});

test('PLATFORM_LOAD_CURRENCIES and the flag override switch the generator off', () => {
  expect(loadConfig({ PLATFORM_LOAD_CURRENCIES: 'false' }).PLATFORM_LOAD_CURRENCIES).toBe(false);
  expect(loadConfig({}, { PLATFORM_LOAD_CURRENCIES: 'false' }).PLATFORM_LOAD_CURRENCIES).toBe(
    false,
  );
  expect(() => loadConfig({ PLATFORM_LOAD_CURRENCIES: 'maybe' })).toThrow(ConfigError);
});

test('empty variables count as unset', () => {
  expect(loadConfig({ DATA_PORT: '' }).DATA_PORT).toBe(8085);
});

test('API_TRUST_PROXY is a hop count or a CIDR list: true is one hop, false none, anything else refused', () => {
  expect(loadConfig({}).API_TRUST_PROXY).toBe(0);
  expect(loadConfig({ API_TRUST_PROXY: 'true' }).API_TRUST_PROXY).toBe(1);
  expect(loadConfig({ API_TRUST_PROXY: 'false' }).API_TRUST_PROXY).toBe(0);
  expect(loadConfig({ API_TRUST_PROXY: '2' }).API_TRUST_PROXY).toBe(2);
  expect(() => loadConfig({ API_TRUST_PROXY: 'leftmost' })).toThrow(ConfigError);
  expect(
    loadConfig({ API_TRUST_PROXY: '10.0.0.0/8, 127.0.0.1/32,fd00::/8' }).API_TRUST_PROXY,
  ).toEqual(['10.0.0.0/8', '127.0.0.1/32', 'fd00::/8']);
  expect(() => loadConfig({ API_TRUST_PROXY: '10.0.0.0/33' })).toThrow(/CIDR list/);
  expect(() => loadConfig({ API_TRUST_PROXY: '10.0.0.1' })).toThrow(ConfigError);
});
