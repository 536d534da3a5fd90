import type { Config } from '../../../shared/config.ts';
import { BinanceKlineClient } from './binanceKlines.ts';
import { HISTORY_SOURCES, type CandleSource, type HistorySourceName } from './candleSource.ts';
import { CoinbaseCandleClient } from './coinbaseCandles.ts';
import { KrakenOhlcClient } from './krakenOhlc.ts';
import type { PatientHttpOptions } from './patientHttp.ts';

type SourceConfig = Pick<
  Config,
  | 'BINANCE_API_URL'
  | 'COINBASE_EXCHANGE_API_URL'
  | 'KRAKEN_API_URL'
  | 'BACKFILL_HTTP_TIMEOUT_MS'
  | 'MARKET_SOURCE'
>;

/** A candle-history client of one exchange, with its own pacing state. */
export function createCandleSource(
  name: HistorySourceName,
  config: SourceConfig,
  http: PatientHttpOptions = {},
): CandleSource {
  const options = { timeoutMs: config.BACKFILL_HTTP_TIMEOUT_MS, ...http };
  switch (name) {
    case 'binance':
      return new BinanceKlineClient({ baseUrl: config.BINANCE_API_URL, ...options });
    case 'coinbase':
      return new CoinbaseCandleClient({ baseUrl: config.COINBASE_EXCHANGE_API_URL, ...options });
    case 'kraken':
      return new KrakenOhlcClient({ baseUrl: config.KRAKEN_API_URL, ...options });
  }
}

/**
 * The exchanges gap healing asks, in MARKET_SOURCE's order (the simulated market has no history);
 * Binance when MARKET_SOURCE names no exchange.
 */
export function historySourceNames(config: Pick<Config, 'MARKET_SOURCE'>): HistorySourceName[] {
  const named = config.MARKET_SOURCE.split(',').filter((name): name is HistorySourceName =>
    (HISTORY_SOURCES as readonly string[]).includes(name),
  );
  return named.length > 0 ? [...new Set(named)] : ['binance'];
}

export function historySources(config: SourceConfig, http: PatientHttpOptions = {}) {
  return historySourceNames(config).map((name) => createCandleSource(name, config, http));
}
