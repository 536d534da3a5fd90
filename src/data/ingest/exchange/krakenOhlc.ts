import type { CandleSource, RawKline } from './candleSource.ts';
import { intervalMs } from './intervals.ts';
import { ExchangeError, PatientHttp, type PatientHttpOptions } from './patientHttp.ts';

// Kraken OHLC: GET /0/public/OHLC?pair=XBTUSD&interval=1&since=<s>
// → {"error":[],"result":{"XXBTZUSD":[[time s, open, high, low, close, vwap, volume, count], …],
// "last": …}}. Kraken keeps only the last 720 candles of each size: `since` filters inside them,
// it does not reach further back. Older ranges are therefore not asked for at all, and a range
// that starts before the horizon gets what exists. Failures come in `error` with status 200;
// "EGeneral:Too many requests" is its rate limit (about one public call a second per IP).

export const KRAKEN_OHLC_KEPT = 720;
/** Kraken's interval parameter (minutes) by our interval names. */
const MINUTES: Record<string, number> = {
  '1m': 1,
  '5m': 5,
  '15m': 15,
  '30m': 30,
  '1h': 60,
  '4h': 240,
  '1d': 1440,
  '1w': 10080,
};
const MIN_SPACING_MS = 1000;
/** Kraken's counters decay in about this long; its body-level limit carries no Retry-After. */
const RATE_LIMIT_REST_MS = 15_000;
const BUSY_REST_MS = 2_000;
// Kraken's own names for a few assets.
const KRAKEN_ASSET: Record<string, string> = { BTC: 'XBT', DOGE: 'XDG' };

export interface KrakenClientOptions extends PatientHttpOptions {
  baseUrl: string;
}

interface KrakenAnswer {
  error?: unknown;
  result?: Record<string, unknown>;
}

export class KrakenOhlcClient implements CandleSource {
  readonly name = 'kraken' as const;
  readonly intervals = Object.keys(MINUTES);
  readonly defaultQuote = 'USD';
  private readonly baseUrl: string;
  private readonly http: PatientHttp;

  constructor(options: KrakenClientOptions) {
    const { baseUrl, ...http } = options;
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.http = new PatientHttp('Kraken', { minSpacingMs: MIN_SPACING_MS, ...http });
  }

  symbol(code: string, quote = this.defaultQuote): string {
    const upper = code.toUpperCase();
    return `${KRAKEN_ASSET[upper] ?? upper}${quote.toUpperCase()}`;
  }

  horizonMs(interval: string, nowMs: number): number {
    const step = intervalMs(interval);
    return (Math.floor(nowMs / step) - (KRAKEN_OHLC_KEPT - 1)) * step;
  }

  async *candles(
    symbol: string,
    interval: string,
    fromMs: number,
    toMs: number,
  ): AsyncGenerator<RawKline[]> {
    const minutes = MINUTES[interval];
    if (!minutes) throw new ExchangeError(`Kraken has no ${interval} candles`);
    if (toMs <= this.horizonMs(interval, this.http.now)) return;
    const url =
      `${this.baseUrl}/0/public/OHLC?pair=${encodeURIComponent(symbol)}` +
      `&interval=${minutes}&since=${Math.floor(fromMs / 1000) - 1}`;
    const result = (await this.call(url)) ?? {};
    const key = Object.keys(result).find((k) => k !== 'last');
    const rows = key ? result[key] : [];
    if (!Array.isArray(rows) || !rows.every(Array.isArray)) {
      throw new ExchangeError('Kraken answered something other than a list of OHLC rows');
    }
    const page = (rows as unknown[][])
      .map(toKline)
      .filter((k) => typeof k[0] === 'number' && k[0] >= fromMs && k[0] < toMs);
    if (page.length > 0) yield page;
  }

  async listed(codes: string[], quote = this.defaultQuote): Promise<Set<string>> {
    const result = (await this.call(`${this.baseUrl}/0/public/AssetPairs`)) ?? {};
    const names = new Set(
      Object.values(result).map((p) => String((p as { wsname?: unknown }).wsname)),
    );
    return new Set(
      codes.filter((code) => names.has(`${KRAKEN_ASSET[code] ?? code}/${quote.toUpperCase()}`)),
    );
  }

  private async call(url: string): Promise<Record<string, unknown> | undefined> {
    const body = (await this.http.getJson(url, { throttledBody })) as KrakenAnswer;
    const errors = Array.isArray(body.error) ? (body.error as unknown[]).map(String) : [];
    if (errors.length > 0)
      throw new ExchangeError(`Kraken refused the request: ${errors.join('; ')}`);
    return body.result;
  }
}

/** Rate limits and passing outages, both said in the body: how long to rest before asking again. */
function throttledBody(body: unknown): number | undefined {
  const errors = (body as KrakenAnswer | null)?.error;
  if (!Array.isArray(errors)) return undefined;
  if (errors.some((e) => String(e).startsWith('EGeneral:Too many'))) return RATE_LIMIT_REST_MS;
  if (errors.some((e) => /^EService:(Unavailable|Busy)/.test(String(e)))) return BUSY_REST_MS;
  return undefined;
}

/** [time s, open, high, low, close, vwap, volume, count] → [time ms, open, high, low, close, volume]. */
function toKline(c: unknown[]): RawKline {
  const time = typeof c[0] === 'number' ? c[0] * 1000 : c[0];
  return [time, c[1], c[2], c[3], c[4], c[6]];
}
