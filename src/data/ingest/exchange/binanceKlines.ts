import type { CandleSource, RawKline } from './candleSource.ts';
import { INTERVALS, intervalMs } from './intervals.ts';
import {
  ExchangeError,
  PatientHttp,
  retryAfterMs,
  type PatientHttpOptions,
} from './patientHttp.ts';

export { ExchangeError };
export type { RawKline };

// Binance spot klines over REST: GET /api/v3/klines (weight 2, at most 1000 candles a call).
// Binance counts request weight per IP and minute and reports the running total in
// X-MBX-USED-WEIGHT-1M; going over the limit earns 429 with Retry-After, and ignoring 429s earns
// 418 (an IP ban). The client therefore paces itself on that header (which also reflects what
// other processes on the same address spend), honours Retry-After, and stops at 418.

export const BINANCE_KLINE_LIMIT = 1000;
const DEFAULT_WEIGHT_LIMIT = 6000;
/** Pause when this share of the minute's weight is used; leaves room for the live harvester. */
const WEIGHT_HEADROOM = 0.8;

export interface BinanceClientOptions extends PatientHttpOptions {
  baseUrl: string;
  weightLimit?: number;
}

const exchangeInfo = (body: unknown) =>
  ((body as { symbols?: unknown }).symbols ?? []) as Array<{
    symbol?: unknown;
    status?: unknown;
    baseAsset?: unknown;
    quoteAsset?: unknown;
  }>;

export class BinanceKlineClient implements CandleSource {
  readonly name = 'binance' as const;
  readonly intervals = INTERVALS;
  readonly defaultQuote = 'USDT';
  private readonly baseUrl: string;
  private readonly weightLimit: number;
  private readonly http: PatientHttp;

  constructor(options: BinanceClientOptions) {
    const { baseUrl, weightLimit, ...http } = options;
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.weightLimit = weightLimit ?? DEFAULT_WEIGHT_LIMIT;
    this.http = new PatientHttp('Binance', http);
  }

  symbol(code: string, quote = this.defaultQuote): string {
    return `${code.toUpperCase()}${quote.toUpperCase()}`;
  }

  candles(symbol: string, interval: string, fromMs: number, toMs: number) {
    return this.klines(symbol, interval, intervalMs(interval), fromMs, toMs);
  }

  /** Every kline with an open time in [fromMs, toMs), page by page. */
  async *klines(
    symbol: string,
    interval: string,
    stepMs: number,
    fromMs: number,
    toMs: number,
  ): AsyncGenerator<RawKline[]> {
    let start = fromMs;
    while (start < toMs) {
      const page = await this.page(symbol, interval, start, toMs - 1);
      const inRange = page.filter((k) => typeof k[0] === 'number' && k[0] >= start && k[0] < toMs);
      if (inRange.length > 0) yield inRange;
      const last = page[page.length - 1]?.[0];
      if (page.length < BINANCE_KLINE_LIMIT || typeof last !== 'number' || last < start) return;
      start = last + stepMs;
    }
  }

  async page(
    symbol: string,
    interval: string,
    startMs: number,
    endMs: number,
  ): Promise<RawKline[]> {
    const url =
      `${this.baseUrl}/api/v3/klines?symbol=${encodeURIComponent(symbol)}` +
      `&interval=${encodeURIComponent(interval)}&startTime=${startMs}&endTime=${endMs}` +
      `&limit=${BINANCE_KLINE_LIMIT}`;
    const body = await this.http.getJson(url, this.hooks);
    if (!Array.isArray(body) || !body.every(Array.isArray)) {
      throw new ExchangeError('Binance answered something other than an array of klines');
    }
    return body as RawKline[];
  }

  /** Pairs in trading against `quote`, from exchangeInfo (weight 20, every symbol at once). */
  async listed(codes: string[], quote = this.defaultQuote): Promise<Set<string>> {
    const body = await this.http.getJson(
      `${this.baseUrl}/api/v3/exchangeInfo?permissions=SPOT`,
      this.hooks,
    );
    const trading = new Set(
      exchangeInfo(body)
        .filter((s) => s.status === 'TRADING' && s.quoteAsset === quote.toUpperCase())
        .map((s) => String(s.baseAsset)),
    );
    return new Set(codes.filter((code) => trading.has(code.toUpperCase())));
  }

  private readonly hooks = {
    errorText,
    fatal: (response: Response) => {
      if (response.status !== 418) return undefined;
      const seconds = Math.ceil((retryAfterMs(response) ?? 0) / 1000);
      return new ExchangeError(
        `Binance banned this IP address (418)${seconds ? ` for ${seconds} s` : ''}; stopping`,
        418,
      );
    },
    after: (response: Response) => this.paceOnWeight(response),
  };

  private async paceOnWeight(response: Response) {
    const used = Number(response.headers.get('x-mbx-used-weight-1m'));
    if (!Number.isFinite(used) || used < this.weightLimit * WEIGHT_HEADROOM) return;
    // The weight window is the calendar minute; wait for the next one (plus a little skew).
    const now = this.http.now;
    await this.http.wait(
      `request weight ${used}/${this.weightLimit}`,
      60_000 - (now % 60_000) + 500,
    );
  }
}

function errorText(text: string): string | undefined {
  try {
    const parsed = JSON.parse(text) as { msg?: string; code?: number };
    if (parsed.msg)
      return `${parsed.msg}${parsed.code !== undefined ? ` (code ${parsed.code})` : ''}`;
  } catch {
    // not JSON: the caller shows the start of the text
  }
  return undefined;
}
