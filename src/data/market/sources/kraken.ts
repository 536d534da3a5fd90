import { z } from 'zod';
import { createExchangeSource } from './exchangeSource.ts';
import { positivePrice, SourceError, type HttpSourceOptions, type PriceSource } from './types.ts';

// GET /0/public/Ticker (no pair: every tradeable pair, so one unknown pair cannot fail the whole
// request) → {"error":[],"result":{"XXBTZUSD":{"c":["65000.10000","0.0015"],…},"SOLUSD":{…}}}.
// Kraken reports failures in `error` with status 200, e.g. "EService:Unavailable".
const tickerAnswer = z.object({
  error: z.array(z.string()),
  result: z.record(z.string(), z.object({ c: z.array(z.unknown()).min(1) }).loose()).optional(),
});

// Kraken's body-level rate limit carries no Retry-After; its counters decay in about this long.
const RATE_LIMIT_REST_MS = 15_000;

// Kraken's own names for a few assets.
const KRAKEN_ASSET: Record<string, string> = { BTC: 'XBT', DOGE: 'XDG' };

/** Ticker keys under which Kraken may list CODE/USD: legacy X…Z… names first. */
export function krakenPairKeys(code: string): string[] {
  const asset = KRAKEN_ASSET[code] ?? code;
  return [`X${asset}ZUSD`, `${asset}ZUSD`, `${asset}USD`];
}

const isTransient = (body: unknown) => {
  if (typeof body !== 'object' || body === null) return false;
  const errors = (body as { error?: unknown }).error;
  return (
    Array.isArray(errors) &&
    errors.some((e) => typeof e === 'string' && /^EService:(Unavailable|Busy)/.test(e))
  );
};

export function createKrakenSource(options: HttpSourceOptions): PriceSource {
  const name = 'kraken';
  return createExchangeSource(options, {
    name,
    path: '/0/public/Ticker',
    // Public endpoints allow about one call a second per IP.
    minSpacingMs: 1000,
    isTransient,
    answer: tickerAnswer,
    answerName: 'ticker',
    prices: ({ error, result }, codes, client) => {
      if (error.some((e) => e.startsWith('EGeneral:Too many requests'))) {
        client.restFor(RATE_LIMIT_REST_MS);
        throw new SourceError(name, 'rate_limited', error.join('; '));
      }
      if (error.length > 0 || !result) {
        throw new SourceError(name, 'exchange_error', error.join('; ') || 'no result');
      }
      return pricesFromTickers(result, codes);
    },
  });
}

function pricesFromTickers(result: Record<string, { c: unknown[] }>, codes: string[]) {
  const prices = new Map<string, number>();
  for (const code of codes) {
    const price = krakenPairKeys(code)
      .map((key) => positivePrice(result[key]?.c[0]))
      .find((p) => p !== null);
    if (price !== undefined && price !== null) prices.set(code, price);
  }
  return prices;
}
