import type { CandleSource, RawKline } from './candleSource.ts';
import { intervalMs } from './intervals.ts';
import { ExchangeError, PatientHttp, type PatientHttpOptions } from './patientHttp.ts';

// Coinbase Exchange candles: GET /products/{BTC-USD}/candles?granularity=60&start=…&end=…
// → [[time s, low, high, open, close, volume], …], newest first, at most 300 per call (a wider
// range is refused with 400). Minutes without a trade have no candle at all, so pages advance by
// the range asked, not by what came back. Public endpoints allow about 10 requests a second per
// IP; more earns 429.

export const COINBASE_CANDLE_LIMIT = 300;
/** Granularities Coinbase serves, in seconds, by our interval names. */
const GRANULARITY: Record<string, number> = {
  '1m': 60,
  '5m': 300,
  '15m': 900,
  '1h': 3600,
  '6h': 21600,
  '1d': 86400,
};
const MIN_SPACING_MS = 110;

export interface CoinbaseClientOptions extends PatientHttpOptions {
  baseUrl: string;
}

export class CoinbaseCandleClient implements CandleSource {
  readonly name = 'coinbase' as const;
  readonly intervals = Object.keys(GRANULARITY);
  readonly defaultQuote = 'USD';
  private readonly baseUrl: string;
  private readonly http: PatientHttp;

  constructor(options: CoinbaseClientOptions) {
    const { baseUrl, ...http } = options;
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.http = new PatientHttp('Coinbase', { minSpacingMs: MIN_SPACING_MS, ...http });
  }

  symbol(code: string, quote = this.defaultQuote): string {
    return `${code.toUpperCase()}-${quote.toUpperCase()}`;
  }

  async *candles(
    symbol: string,
    interval: string,
    fromMs: number,
    toMs: number,
  ): AsyncGenerator<RawKline[]> {
    const granularity = GRANULARITY[interval];
    if (!granularity) throw new ExchangeError(`Coinbase has no ${interval} candles`);
    const step = intervalMs(interval);
    for (let start = fromMs; start < toMs; start += COINBASE_CANDLE_LIMIT * step) {
      const end = Math.min(toMs, start + COINBASE_CANDLE_LIMIT * step);
      // Both ends are inclusive at Coinbase: ask up to the last open time wanted.
      const url =
        `${this.baseUrl}/products/${encodeURIComponent(symbol)}/candles?granularity=${granularity}` +
        `&start=${iso(start)}&end=${iso(end - step)}`;
      const body = await this.http.getJson(url, { errorText });
      if (!Array.isArray(body) || !body.every(Array.isArray)) {
        throw new ExchangeError('Coinbase answered something other than an array of candles');
      }
      const page = (body as unknown[][])
        .map(toKline)
        .filter((k) => typeof k[0] === 'number' && k[0] >= start && k[0] < end)
        .sort((a, b) => (a[0] as number) - (b[0] as number));
      if (page.length > 0) yield page;
    }
  }

  async listed(codes: string[], quote = this.defaultQuote): Promise<Set<string>> {
    const body = await this.http.getJson(`${this.baseUrl}/products`, { errorText });
    const products = Array.isArray(body) ? (body as Array<Record<string, unknown>>) : [];
    const trading = new Set(
      products
        .filter(
          (p) =>
            p.quote_currency === quote.toUpperCase() &&
            p.status === 'online' &&
            p.trading_disabled !== true,
        )
        .map((p) => String(p.base_currency)),
    );
    return new Set(codes.filter((code) => trading.has(code.toUpperCase())));
  }
}

/** [time s, low, high, open, close, volume] → [time ms, open, high, low, close, volume]. */
function toKline(c: unknown[]): RawKline {
  const time = typeof c[0] === 'number' ? c[0] * 1000 : c[0];
  return [time, c[3], c[2], c[1], c[4], c[5]];
}

const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

function errorText(text: string): string | undefined {
  try {
    return (JSON.parse(text) as { message?: string }).message || undefined;
  } catch {
    return undefined;
  }
}
