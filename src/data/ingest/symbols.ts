// Exchange symbols are pairs such as BTCUSDT; the platform stores prices in US dollars by currency
// code, so only pairs quoted in the dollar or a dollar stablecoin map to a code.

const USD_QUOTES = ['FDUSD', 'USDT', 'USDC', 'BUSD', 'TUSD', 'USD'];

/** BTCUSDT → BTC; null when the pair is not quoted in dollars (ETHBTC). */
export function codeFromSymbol(symbol: string): string | null {
  const upper = symbol.toUpperCase();
  for (const quote of USD_QUOTES) {
    if (upper.length > quote.length && upper.endsWith(quote)) return upper.slice(0, -quote.length);
  }
  return null;
}

export interface BinanceFileName {
  symbol: string;
  code: string | null;
  interval: string;
  /** The period the file covers, from its name: a month or a day. */
  from: Date;
  to: Date;
}

const BINANCE_NAME =
  /^([A-Z0-9]+)-(1s|\d+[mhdw]|1M|1mo)-(\d{4})-(\d{2})(?:-(\d{2}))?\.(?:zip|csv)$/i;

/** Parses Binance's archive names: BTCUSDT-1m-2025-01.zip (monthly), BTCUSDT-1m-2025-01-15.zip (daily). */
export function parseBinanceFileName(name: string): BinanceFileName | null {
  const match = BINANCE_NAME.exec(name);
  if (!match) return null;
  const [, symbol = '', interval = '', year, month, day] = match;
  const y = Number(year);
  const m = Number(month) - 1;
  if (m < 0 || m > 11) return null;
  const from = new Date(Date.UTC(y, m, day ? Number(day) : 1));
  const to = day ? new Date(Date.UTC(y, m, Number(day) + 1)) : new Date(Date.UTC(y, m + 1, 1));
  return { symbol: symbol.toUpperCase(), code: codeFromSymbol(symbol), interval, from, to };
}
