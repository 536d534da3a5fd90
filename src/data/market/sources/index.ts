import type { Config, MarketSourceName } from '../../../shared/config.ts';
import { createBinanceSource } from './binance.ts';
import { createCoinbaseSource } from './coinbase.ts';
import { createKrakenSource } from './kraken.ts';
import { createSimulatedSource } from './simulated.ts';
import type { PriceSource } from './types.ts';

export type { PriceRequest, PriceSource } from './types.ts';
export { SOURCE_FAILURES, SourceError } from './types.ts';

/** MARKET_SOURCE as a list of names, in order of preference. */
export function marketSourceNames(config: Pick<Config, 'MARKET_SOURCE'>): MarketSourceName[] {
  return config.MARKET_SOURCE.split(',') as MarketSourceName[];
}

/** Builds the configured sources; each keeps its own rate-limit state for the process's life. */
export function createPriceSources(config: Config): PriceSource[] {
  const timeoutMs = config.MARKET_REQUEST_TIMEOUT_MS;
  const factories: Record<MarketSourceName, () => PriceSource> = {
    simulated: () => createSimulatedSource(config.MARKET_SIMULATED_SEED),
    coinbase: () => createCoinbaseSource({ baseUrl: config.COINBASE_API_URL, timeoutMs }),
    binance: () => createBinanceSource({ baseUrl: config.BINANCE_API_URL, timeoutMs }),
    kraken: () => createKrakenSource({ baseUrl: config.KRAKEN_API_URL, timeoutMs }),
  };
  return [...new Set(marketSourceNames(config))].map((name) => factories[name]());
}
