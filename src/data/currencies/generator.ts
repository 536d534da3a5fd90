import type { DatabasePool } from 'slonik';
import { z } from 'zod';
import type { Logger } from '../../shared/logger.ts';
import {
  currencyEntrySchema,
  shippedCurrencies,
  upsertCurrencies,
  type CurrencyEntry,
} from './catalog.ts';

export const DEFAULT_CURRENCY_LIST_URL = 'https://api.coinbase.com/v2/currencies/crypto';

// Coinbase's public list of crypto assets: { data: [{ code, name, ... }] }.
const coinbaseCurrencies = z.object({
  data: z.array(z.object({ code: z.string(), name: z.string() }).loose()),
});

async function fetchExchangeList(url: string, timeoutMs: number): Promise<CurrencyEntry[]> {
  const response = await fetch(url, {
    signal: AbortSignal.timeout(timeoutMs),
    headers: { accept: 'application/json' },
  });
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  const body = coinbaseCurrencies.parse(await response.json());
  return body.data
    .map((c) => ({ code: c.code.trim().toUpperCase(), name: c.name.trim().slice(0, 100) }))
    .filter((c) => currencyEntrySchema.safeParse(c).success);
}

export interface CurrencyGeneratorOptions {
  pool: DatabasePool;
  logger: Logger;
  /** PLATFORM_LOAD_CURRENCIES: when false only the shipped list is used. */
  loadFromExchange: boolean;
  url?: string;
  timeoutMs?: number;
}

/**
 * The currency generator: installs the shipped list, then (when allowed) refreshes names and adds
 * the currencies an exchange lists. Without network it keeps the shipped list and warns once.
 */
export async function generateCurrencies(
  options: CurrencyGeneratorOptions,
): Promise<{ shipped: number; fromExchange: number | null }> {
  const shipped = shippedCurrencies().map((entry, index) => ({ ...entry, rank: index + 1 }));
  await upsertCurrencies(options.pool, shipped);
  if (!options.loadFromExchange) return { shipped: shipped.length, fromExchange: null };

  const url = options.url ?? DEFAULT_CURRENCY_LIST_URL;
  try {
    const listed = await fetchExchangeList(url, options.timeoutMs ?? 5000);
    const shippedCodes = new Set(shipped.map((c) => c.code));
    // The shipped names are curated; the exchange only contributes currencies we do not know.
    await upsertCurrencies(
      options.pool,
      listed.filter((c) => !shippedCodes.has(c.code)),
    );
    options.logger.info({ url, listed: listed.length }, 'currency list refreshed from exchange');
    return { shipped: shipped.length, fromExchange: listed.length };
  } catch (error) {
    options.logger.warn(
      { url, reason: error instanceof Error ? error.message : String(error) },
      'could not refresh the currency list; serving the shipped list',
    );
    return { shipped: shipped.length, fromExchange: null };
  }
}
