// What backfill and gap healing need from an exchange's candle history, whichever exchange it is.

export const HISTORY_SOURCES = ['binance', 'coinbase', 'kraken'] as const;
export type HistorySourceName = (typeof HISTORY_SOURCES)[number];

/** [open time ms, open, high, low, close, volume, …]: Binance's kline layout, prices as sent. */
export type RawKline = unknown[];

export interface CandleSource {
  readonly name: HistorySourceName;
  /** Candle sizes (Binance names) this exchange serves. */
  readonly intervals: readonly string[];
  /** The quote asset used when none is given (USDT on Binance, USD elsewhere). */
  readonly defaultQuote: string;
  /** The exchange's pair for a currency code (BTCUSDT, BTC-USD, XBTUSD). */
  symbol(code: string, quote?: string): string;
  /** Every candle with an open time in [fromMs, toMs) the exchange still has, page by page. */
  candles(
    symbol: string,
    interval: string,
    fromMs: number,
    toMs: number,
  ): AsyncGenerator<RawKline[]>;
  /** The codes among `codes` the exchange lists against `quote` (one request). */
  listed(codes: string[], quote?: string): Promise<Set<string>>;
  /**
   * The earliest open time the exchange can still serve at `nowMs`, when it keeps only recent
   * candles (Kraken: the last 720 of each size); undefined when it keeps everything.
   */
  horizonMs?(interval: string, nowMs: number): number;
}
