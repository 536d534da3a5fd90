import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { klineValues, MINUTE } from './fixtures.ts';

// Local stand-ins for the candle-history APIs of Coinbase Exchange and Kraken, answering in their
// exact shapes (recorded from the real APIs): Coinbase's [time, low, high, open, close, volume]
// newest first, 300 at most, and no candle for a minute without trades; Kraken's
// {"error":[],"result":{"XXBTZUSD":[[time,"o","h","l","c","vwap","volume",count],…],"last":…}}
// holding only the last 720 candles. Faults are scripted for the next requests.

export type HistoryFault =
  | { status: 429; retryAfter?: number }
  | { status: 500 | 502 | 503 }
  | { bodyError: string }
  | { hangMs: number };

abstract class FakeHistoryServer {
  readonly requests: URL[] = [];
  readonly faults: HistoryFault[] = [];
  /** Every request from this one on fails with 503 (an exchange that is down). */
  failAlwaysFrom: number | null = null;
  /** Candles exist from (a listing) … until (the present, or a delisting). */
  listedFrom = Date.UTC(2017, 0, 1);
  until = Date.now();
  /** Bases the exchange lists against USD. */
  listed = new Set(['BTC', 'ETH', 'SOL', 'XRP', 'ADA', 'DOGE', 'LTC']);
  url = '';
  private server: Server | null = null;

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

  reset() {
    this.requests.length = 0;
    this.faults.length = 0;
    this.failAlwaysFrom = null;
    this.until = Date.now();
  }

  /** Open times of one-minute candles in [from, to] the exchange has. */
  protected minutes(fromMs: number, toMs: number): number[] {
    const times: number[] = [];
    const start = Math.ceil(Math.max(fromMs, this.listedFrom) / MINUTE) * MINUTE;
    for (let t = start; t <= Math.min(toMs, this.until); t += MINUTE) {
      if (this.hasTrades(t)) times.push(t);
    }
    return times;
  }

  /** Whether minute `t` saw a trade; every one by default. */
  hasTrades: (t: number) => boolean = () => true;

  private handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://x');
    this.requests.push(url);
    if (this.failAlwaysFrom !== null && this.requests.length >= this.failAlwaysFrom) {
      return json(res, 503, { message: 'service unavailable' });
    }
    const fault = this.faults.shift();
    if (fault && 'hangMs' in fault) {
      setTimeout(() => this.answer(url, res), fault.hangMs).unref();
      return;
    }
    if (fault && 'status' in fault) {
      const headers: Record<string, string> = {};
      if ('retryAfter' in fault && fault.retryAfter !== undefined)
        headers['retry-after'] = String(fault.retryAfter);
      return json(res, fault.status, this.statusBody(fault.status), headers);
    }
    if (fault && 'bodyError' in fault) return json(res, 200, { error: [fault.bodyError] });
    this.answer(url, res);
  }

  protected abstract answer(url: URL, res: ServerResponse): void;
  protected abstract statusBody(status: number): unknown;
}

export class FakeCoinbase extends FakeHistoryServer {
  protected statusBody(status: number) {
    return { message: status === 429 ? 'Public rate limit exceeded' : 'Internal server error' };
  }

  protected answer(url: URL, res: ServerResponse) {
    if (url.pathname === '/products') {
      return json(
        res,
        200,
        [...this.listed].map((base) => ({
          id: `${base}-USD`,
          base_currency: base,
          quote_currency: 'USD',
          status: 'online',
          trading_disabled: false,
        })),
      );
    }
    const match = /^\/products\/([A-Z0-9]+)-USD\/candles$/.exec(url.pathname);
    if (!match) return json(res, 404, { message: 'NotFound' });
    if (!this.listed.has(match[1] ?? '')) return json(res, 404, { message: 'NotFound' });
    const granularity = Number(url.searchParams.get('granularity'));
    if (granularity !== 60) return json(res, 400, { message: 'Unsupported granularity' });
    const start = Date.parse(url.searchParams.get('start') ?? '');
    const end = Date.parse(url.searchParams.get('end') ?? '');
    if ((end - start) / MINUTE + 1 > 300) {
      return json(res, 400, {
        message:
          'granularity too small for the requested time range. Count of aggregations requested exceeds 300',
      });
    }
    const candles = this.minutes(start, end)
      .reverse()
      .map((t) => {
        const v = klineValues(t / MINUTE, 40_000);
        return [t / 1000, v.low, v.high, v.open, v.close, v.volume];
      });
    json(res, 200, candles);
  }
}

const KRAKEN_NAMES: Record<string, string> = { BTC: 'XBT', DOGE: 'XDG' };

export class FakeKraken extends FakeHistoryServer {
  protected statusBody(status: number) {
    return { error: [status === 429 ? 'EGeneral:Too many requests' : 'EService:Unavailable'] };
  }

  protected answer(url: URL, res: ServerResponse) {
    const pairs = [...this.listed].map((base) => {
      const name = KRAKEN_NAMES[base] ?? base;
      return { key: `X${name}ZUSD`, altname: `${name}USD`, wsname: `${name}/USD` };
    });
    if (url.pathname === '/0/public/AssetPairs') {
      return json(res, 200, {
        error: [],
        result: Object.fromEntries(
          pairs.map((p) => [p.key, { altname: p.altname, wsname: p.wsname, quote: 'ZUSD' }]),
        ),
      });
    }
    if (url.pathname !== '/0/public/OHLC')
      return json(res, 404, { error: ['EGeneral:Unknown method'] });
    const pair = pairs.find((p) => p.altname === url.searchParams.get('pair'));
    if (!pair) return json(res, 200, { error: ['EQuery:Unknown asset pair'] });
    if (url.searchParams.get('interval') !== '1')
      return json(res, 200, { error: ['EGeneral:Invalid arguments'] });
    const since = Number(url.searchParams.get('since') ?? 0) * 1000;
    // Only the last 720 candles are kept, the newest one still open.
    const newest = Math.floor(this.until / MINUTE) * MINUTE;
    const kept = this.minutes(newest - 719 * MINUTE, newest).filter((t) => t > since);
    const rows = kept.map((t) => {
      const v = klineValues(t / MINUTE, 40_000);
      return [
        t / 1000,
        v.open.toFixed(1),
        v.high.toFixed(1),
        v.low.toFixed(1),
        v.close.toFixed(1),
        ((v.open + v.close) / 2).toFixed(1),
        v.volume.toFixed(8),
        17,
      ];
    });
    json(res, 200, { error: [], result: { [pair.key]: rows, last: newest / 1000 } });
  }
}

function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(body));
}
