import { z } from 'zod';
import { createExchangeSource } from './exchangeSource.ts';
import { positivePrice, type HttpSourceOptions, type PriceSource } from './types.ts';

// GET /api/v3/ticker/price → [{"symbol":"BTCUSDT","price":"65000.12000000"}, …], every symbol in
// one request (weight 4 of the 6 000 a minute an IP may spend).
const tickerPrices = z.array(z.object({ symbol: z.string(), price: z.unknown() }).loose());

// Dollar-like quotes, best first. Binance has no USD book to speak of: USDT stands for the dollar.
const QUOTES = ['USDT', 'USDC', 'FDUSD'];

export function createBinanceSource(options: HttpSourceOptions): PriceSource {
  return createExchangeSource(options, {
    name: 'binance',
    path: '/api/v3/ticker/price',
    minSpacingMs: 250,
    answer: tickerPrices,
    answerName: 'ticker',
    prices: pricesFromTickers,
  });
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
