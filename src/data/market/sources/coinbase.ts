import { z } from 'zod';
import { ExchangeClient } from '../http.ts';
import {
  positivePrice,
  SourceError,
  type HttpSourceOptions,
  type PriceRequest,
  type PriceSource,
} from './types.ts';

// GET /v2/exchange-rates?currency=USD → {"data":{"currency":"USD","rates":{"BTC":"0.0000153",…}}}:
// how many units of each currency one dollar buys, fiat and crypto alike, in one request.
const exchangeRates = z.object({
  data: z.object({ currency: z.literal('USD'), rates: z.record(z.string(), z.unknown()) }),
});

export function createCoinbaseSource(options: HttpSourceOptions): PriceSource {
  const name = 'coinbase';
  // Coinbase allows 10 000 public requests an hour per IP: one a second leaves room for others.
  const client = new ExchangeClient({
    source: name,
    timeoutMs: options.timeoutMs,
    retries: options.retries,
    minSpacingMs: 500,
  });
  return {
    name,
    async fetchPrices({ codes, signal, deadline }: PriceRequest) {
      const url = new URL('/v2/exchange-rates', options.baseUrl);
      url.searchParams.set('currency', 'USD');
      return client.getJson(url, { signal, deadline }, (answer) => {
        const body = exchangeRates.safeParse(answer);
        if (!body.success) {
          throw new SourceError(name, 'malformed', 'unexpected exchange-rates shape');
        }
        const prices = new Map<string, number>();
        for (const code of codes) {
          const rate = positivePrice(body.data.data.rates[code]);
          // Units per dollar → dollars per unit; ten significant digits drop the division's noise.
          if (rate !== null) prices.set(code, Number((1 / rate).toPrecision(10)));
        }
        return prices;
      });
    },
  };
}
