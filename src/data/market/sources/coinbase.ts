import { z } from 'zod';
import { createExchangeSource } from './exchangeSource.ts';
import { positivePrice, type HttpSourceOptions, type PriceSource } from './types.ts';

// GET /v2/exchange-rates?currency=USD → {"data":{"currency":"USD","rates":{"BTC":"0.0000153",…}}}:
// how many units of each currency one dollar buys, fiat and crypto alike, in one request.
const exchangeRates = z.object({
  data: z.object({ currency: z.literal('USD'), rates: z.record(z.string(), z.unknown()) }),
});

export function createCoinbaseSource(options: HttpSourceOptions): PriceSource {
  return createExchangeSource(options, {
    name: 'coinbase',
    path: '/v2/exchange-rates?currency=USD',
    // Coinbase allows 10 000 public requests an hour per IP: one a second leaves room for others.
    minSpacingMs: 500,
    answer: exchangeRates,
    answerName: 'exchange-rates',
    prices: ({ data }, codes) => {
      const prices = new Map<string, number>();
      for (const code of codes) {
        const rate = positivePrice(data.rates[code]);
        // Units per dollar → dollars per unit; ten significant digits drop the division's noise.
        if (rate !== null) prices.set(code, Number((1 / rate).toPrecision(10)));
      }
      return prices;
    },
  });
}
