import { z } from 'zod';
import { booleanFromEnv } from './fields.ts';

// Configuration: where prices come from (the harvester's sources, the exchanges' history APIs for
// backfills and gap healing, the simulated market).

/** Price sources the harvester knows (see src/data/market/sources/). */
export const MARKET_SOURCE_NAMES = ['simulated', 'coinbase', 'binance', 'kraken'] as const;
export type MarketSourceName = (typeof MARKET_SOURCE_NAMES)[number];

export const marketSection = z.object({
  PLATFORM_LOAD_CURRENCIES: booleanFromEnv
    .default(true)
    .describe(
      'Refresh the currency list from an exchange at start-up (false: use the shipped list).',
    ),
  MARKET_SOURCE: z
    .string()
    .regex(
      /^[a-z]+(,[a-z]+)*$/,
      'a comma-separated list of source names such as simulated,coinbase',
    )
    .refine(
      (list) =>
        list.split(',').every((name) => (MARKET_SOURCE_NAMES as readonly string[]).includes(name)),
      `every source must be one of ${MARKET_SOURCE_NAMES.join(', ')}`,
    )
    .default('simulated')
    .describe(
      'Price source(s) of the harvester, in order of preference: simulated (offline default), ' +
        'coinbase, binance, kraken. The first source that prices a currency wins.',
    ),
  MARKET_SIMULATED_SEED: z
    .string()
    .min(1)
    .default('platform')
    .describe('Seed of the simulated market: the same seed gives the same price paths.'),
  SIMULATED_HISTORY_DAYS: z.coerce
    .number()
    .int()
    .min(0)
    .max(366)
    .default(30)
    .describe(
      'Days of one-minute history the first start loads in the background with MARKET_SOURCE=simulated ' +
        'and a database without price history (the simulated paths that lead to the live prices, for ' +
        'every currency, recorded per day like any backfill; never with a real exchange, never over ' +
        'existing data, never twice); 0 turns it off.',
    ),
  MARKET_REQUEST_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(50)
    .max(60000)
    .default(4000)
    .describe('Time-out of one request to an exchange (each retry gets its own).'),
  COINBASE_API_URL: z
    .url()
    .default('https://api.coinbase.com')
    .describe('Base URL of the Coinbase public API (exchange rates).'),
  BINANCE_API_URL: z
    .url()
    .default('https://api.binance.com')
    .describe('Base URL of the Binance spot API (ticker prices; klines for `backfill --source`).'),
  BINANCE_ARCHIVE_URL: z
    .url()
    .default('https://data.binance.vision')
    .describe(
      "Base URL of Binance's public kline archives (`backfill --source binance-archive`: data/spot/monthly|daily/klines/… zips with their .CHECKSUM).",
    ),
  KRAKEN_API_URL: z
    .url()
    .default('https://api.kraken.com')
    .describe(
      'Base URL of the Kraken public API (ticker; OHLC for healing and `backfill --source kraken`).',
    ),
  COINBASE_EXCHANGE_API_URL: z
    .url()
    .default('https://api.exchange.coinbase.com')
    .describe(
      'Base URL of the Coinbase Exchange public API (candles for healing and `backfill --source coinbase`).',
    ),
  HARVEST_INTERVAL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(3600)
    .default(5)
    .describe('Seconds between two harvesting cycles.'),
  HEAL_LOOKBACK_HOURS: z.coerce
    .number()
    .int()
    .min(0)
    .max(8784)
    .default(72)
    .describe(
      'Gap healing: the worker job (every 15 minutes) fills minutes without observation in this many past hours from the candle history of the exchanges MARKET_SOURCE names, in its order (Binance when it names none); 0 turns the job off.',
    ),
  BACKFILL_HTTP_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(300_000)
    .default(15_000)
    .describe('Time-out of one exchange request during `platform backfill --source`.'),
});
