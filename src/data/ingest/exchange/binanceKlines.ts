import { setTimeout as delay } from 'node:timers/promises';

// Binance spot klines over REST: GET /api/v3/klines (weight 2, at most 1000 candles a call).
// Binance counts request weight per IP and minute and reports the running total in
// X-MBX-USED-WEIGHT-1M; going over the limit earns 429 with Retry-After, and ignoring 429s earns
// 418 (an IP ban). The client therefore paces itself on that header (which also reflects what
// other processes on the same address spend), honours Retry-After, and stops at 418.

export const BINANCE_KLINE_LIMIT = 1000;
const DEFAULT_WEIGHT_LIMIT = 6000;
/** Pause when this share of the minute's weight is used; leaves room for the live harvester. */
const WEIGHT_HEADROOM = 0.8;

export class ExchangeError extends Error {
  readonly status: number | undefined;
  readonly retryable: boolean;
  constructor(message: string, status?: number, retryable = false) {
    super(message);
    this.name = 'ExchangeError';
    this.status = status;
    this.retryable = retryable;
  }
}

export interface BinanceClientOptions {
  baseUrl: string;
  timeoutMs?: number;
  /** Retries of one request after time-outs, network errors and 5xx (429s are counted apart). */
  maxRetries?: number;
  weightLimit?: number;
  /** Injected by tests to observe waits without spending them. */
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  /** First back-off after a failure; doubles each retry. */
  backoffMs?: number;
  onWait?: (reason: string, ms: number) => void;
}

/** [openTime, open, high, low, close, volume, closeTime, quoteVolume, trades, takerBase, takerQuote, ignore] */
export type RawKline = unknown[];

export class BinanceKlineClient {
  private readonly options: Required<Omit<BinanceClientOptions, 'onWait'>> &
    Pick<BinanceClientOptions, 'onWait'>;

  constructor(options: BinanceClientOptions) {
    this.options = {
      timeoutMs: 10_000,
      maxRetries: 5,
      weightLimit: DEFAULT_WEIGHT_LIMIT,
      sleep: (ms) => delay(ms),
      now: () => Date.now(),
      backoffMs: 500,
      ...options,
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
    };
  }

  /** Every kline with an open time in [fromMs, toMs), page by page. */
  async *klines(
    symbol: string,
    interval: string,
    intervalMs: number,
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
      start = last + intervalMs;
    }
  }

  async page(
    symbol: string,
    interval: string,
    startMs: number,
    endMs: number,
  ): Promise<RawKline[]> {
    const url =
      `${this.options.baseUrl}/api/v3/klines?symbol=${encodeURIComponent(symbol)}` +
      `&interval=${encodeURIComponent(interval)}&startTime=${startMs}&endTime=${endMs}` +
      `&limit=${BINANCE_KLINE_LIMIT}`;
    let failures = 0;
    let throttles = 0;
    for (;;) {
      let response: Response;
      let body: unknown;
      try {
        response = await fetch(url, {
          signal: AbortSignal.timeout(this.options.timeoutMs),
          headers: { accept: 'application/json' },
        });
        if (response.status === 429) {
          await response.body?.cancel();
          if (++throttles > this.options.maxRetries) {
            throw new ExchangeError('Binance kept answering 429 (rate limited)', 429, true);
          }
          await this.wait('429 rate limited', retryAfterMs(response) ?? 60_000);
          continue;
        }
        if (response.status === 418) {
          await response.body?.cancel();
          const seconds = Math.ceil((retryAfterMs(response) ?? 0) / 1000);
          throw new ExchangeError(
            `Binance banned this IP address (418)${seconds ? ` for ${seconds} s` : ''}; stopping`,
            418,
          );
        }
        if (response.status >= 500) {
          await response.body?.cancel();
          throw new ExchangeError(`Binance answered ${response.status}`, response.status, true);
        }
        if (!response.ok) {
          throw new ExchangeError(
            `Binance refused the request (${response.status}): ${await errorText(response)}`,
            response.status,
          );
        }
        body = await response.json();
      } catch (error) {
        if (error instanceof ExchangeError && !error.retryable) throw error;
        if (error instanceof ExchangeError && error.status === 429) throw error;
        if (++failures > this.options.maxRetries) {
          throw new ExchangeError(
            `Binance request failed after ${failures} attempts: ${describe(error)}`,
            (error as ExchangeError).status,
          );
        }
        await this.wait(describe(error), this.options.backoffMs * 2 ** (failures - 1));
        continue;
      }
      if (!Array.isArray(body) || !body.every(Array.isArray)) {
        throw new ExchangeError('Binance answered something other than an array of klines');
      }
      await this.paceOnWeight(response);
      return body as RawKline[];
    }
  }

  private async paceOnWeight(response: Response) {
    const used = Number(response.headers.get('x-mbx-used-weight-1m'));
    if (!Number.isFinite(used) || used < this.options.weightLimit * WEIGHT_HEADROOM) return;
    // The weight window is the calendar minute; wait for the next one (plus a little skew).
    const now = this.options.now();
    await this.wait(
      `request weight ${used}/${this.options.weightLimit}`,
      60_000 - (now % 60_000) + 500,
    );
  }

  private async wait(reason: string, ms: number) {
    this.options.onWait?.(reason, ms);
    await this.options.sleep(ms);
  }
}

function retryAfterMs(response: Response): number | undefined {
  const header = response.headers.get('retry-after');
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

async function errorText(response: Response): Promise<string> {
  const text = await response.text().catch(() => '');
  try {
    const parsed = JSON.parse(text) as { msg?: string; code?: number };
    if (parsed.msg)
      return `${parsed.msg}${parsed.code !== undefined ? ` (code ${parsed.code})` : ''}`;
  } catch {
    // not JSON: show the start of the text
  }
  return text.slice(0, 200) || response.statusText;
}

function describe(error: unknown): string {
  // AbortSignal.timeout() rejects with a DOMException, which is not always an Error instance.
  const { name, message } = (error ?? {}) as { name?: string; message?: string };
  if (name === 'TimeoutError') return 'request timed out';
  return message ?? String(error);
}
