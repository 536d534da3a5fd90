import { z } from 'zod';
import { ExchangeClient } from '../http.ts';
import {
  positivePrice,
  SourceError,
  type HttpSourceOptions,
  type PriceRequest,
  type PriceSource,
} from './types.ts';

// GET /api/v3/ticker/price → [{"symbol":"BTCUSDT","price":"65000.12000000"}, …], every symbol in
// one request (weight 4 of the 6 000 a minute an IP may spend).
const tickerPrices = z.array(z.object({ symbol: z.string(), price: z.unknown() }).loose());

// Dollar-like quotes, best first. Binance has no USD book to speak of: USDT stands for the dollar.
const QUOTES = ['USDT', 'USDC', 'FDUSD'];

export function createBinanceSource(options: HttpSourceOptions): PriceSource {
  const name = 'binance';
  const client = new ExchangeClient({
    source: name,
    timeoutMs: options.timeoutMs,
    retries: options.retries,
    minSpacingMs: 250,
  });
  return {
    name,
    async fetchPrices({ codes, signal, deadline }: PriceRequest) {
      const url = new URL('/api/v3/ticker/price', options.baseUrl);
      return client.getJson(url, { signal, deadline }, (answer) => {
        const body = tickerPrices.safeParse(answer);
        if (!body.success) throw new SourceError(name, 'malformed', 'unexpected ticker shape');
        return pricesFromTickers(body.data, codes);
      });
    },
  };
}

function pricesFromTickers(tickers: Array<{ symbol: string; price: unknown }>, codes: string[]) {
  const bySymbol = new Map<string, number>();
  for (const ticker of tickers) {
    const price = positivePrice(ticker.price);
    if (price !== null) bySymbol.set(ticker.symbol, price);
  }
  const prices = new Map<string, number>();
  for (const code of codes) {
    if (code === 'USDT') {
      prices.set(code, 1);
      continue;
    }
    const price = QUOTES.map((quote) => bySymbol.get(`${code}${quote}`)).find(
      (p) => p !== undefined,
    );
    if (price !== undefined) prices.set(code, price);
  }
  return prices;
}
