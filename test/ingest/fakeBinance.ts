import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { klineValues, MINUTE } from './fixtures.ts';

export type Fault =
  | { status: 429; retryAfter?: number }
  | { status: 418; retryAfter?: number }
  | { status: 500 | 502 | 503 }
  | { status: 400 }
  | { hangMs: number }
  | { weight: number }
  | { malformed: true };

/**
 * A local stand-in for api.binance.com's GET /api/v3/klines: one-minute klines of any USDT pair
 * in Binance's exact shape (12-element arrays, prices as strings), limit and time range honoured,
 * the X-MBX-USED-WEIGHT-1M header, and scripted faults for the next requests.
 */
export class FakeBinance {
  readonly requests: URL[] = [];
  readonly faults: Fault[] = [];
  /** Klines exist from this instant (a pair's listing) until `until`. */
  listedFrom = Date.UTC(2017, 0, 1);
  until = Date.now();
  failAlwaysFrom: number | null = null;
  /** Bases exchangeInfo lists as trading against USDT (klines answer for any USDT pair). */
  listed = new Set(['BTC', 'ETH', 'SOL', 'XRP', 'ADA', 'DOGE', 'LTC']);
  private server: Server | null = null;
  url = '';

  async start() {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop() {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  private handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://x');
    this.requests.push(url);
    if (url.pathname === '/api/v3/exchangeInfo') return this.exchangeInfo(res);
    if (url.pathname !== '/api/v3/klines')
      return this.json(res, 404, { code: -1, msg: 'not found' });
    if (this.failAlwaysFrom !== null && this.requests.length >= this.failAlwaysFrom) {
      return this.json(res, 503, {
        code: -1001,
        msg: 'Internal error; unable to process your request.',
      });
    }
    const fault = this.faults.shift();
    let weight = this.requests.length * 2;
    let malformed = false;
    if (fault && 'hangMs' in fault) {
      setTimeout(() => this.respondKlines(url, res, weight, false), fault.hangMs).unref();
      return;
    }
    if (fault && 'status' in fault) {
      const headers: Record<string, string> = {};
      if ('retryAfter' in fault && fault.retryAfter !== undefined)
        headers['retry-after'] = String(fault.retryAfter);
      const body =
        fault.status === 400
          ? { code: -1121, msg: 'Invalid symbol.' }
          : fault.status === 429
            ? {
                code: -1003,
                msg: 'Too much request weight used; current limit is 6000 request weight per 1 MINUTE.',
              }
            : { code: -1001, msg: 'Internal error' };
      return this.json(res, fault.status, body, headers);
    }
    if (fault && 'weight' in fault) weight = fault.weight;
    if (fault && 'malformed' in fault) malformed = true;
    this.respondKlines(url, res, weight, malformed);
  }

  private respondKlines(url: URL, res: ServerResponse, weight: number, malformed: boolean) {
    const symbol = url.searchParams.get('symbol') ?? '';
    if (!symbol.endsWith('USDT'))
      return this.json(res, 400, { code: -1121, msg: 'Invalid symbol.' });
    const limit = Math.min(1000, Number(url.searchParams.get('limit') ?? 500));
    const start =
      Math.ceil(Math.max(Number(url.searchParams.get('startTime')), this.listedFrom) / MINUTE) *
      MINUTE;
    const end = Math.min(Number(url.searchParams.get('endTime')), this.until);
    const klines: unknown[][] = [];
    for (let t = start; t <= end && klines.length < limit; t += MINUTE) {
      const v = klineValues(t / MINUTE, 40_000);
      klines.push([
        t,
        v.open.toFixed(8),
        v.high.toFixed(8),
        v.low.toFixed(8),
        v.close.toFixed(8),
        v.volume.toFixed(8),
        t + MINUTE - 1,
        (v.volume * v.close).toFixed(8),
        42,
        (v.volume / 2).toFixed(8),
        ((v.volume / 2) * v.close).toFixed(8),
        '0',
      ]);
    }
    if (malformed && klines[1]) klines[1][2] = 'NaN-ish';
    this.json(res, 200, klines, {
      'x-mbx-used-weight-1m': String(weight),
      'x-mbx-used-weight': String(weight),
    });
  }

  /** exchangeInfo's shape, trimmed to the fields clients read. */
  private exchangeInfo(res: ServerResponse) {
    this.json(res, 200, {
      timezone: 'UTC',
      serverTime: Date.now(),
      symbols: [...this.listed].map((base) => ({
        symbol: `${base}USDT`,
        status: 'TRADING',
        baseAsset: base,
        quoteAsset: 'USDT',
        isSpotTradingAllowed: true,
      })),
    });
  }

  private json(
    res: ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ) {
    res.writeHead(status, { 'content-type': 'application/json;charset=UTF-8', ...headers });
    res.end(JSON.stringify(body));
  }
}
