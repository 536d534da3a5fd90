import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buffer } from 'node:stream/consumers';
import yazl from 'yazl';
import { binanceKlineLine, klineValues, MINUTE } from './fixtures.ts';

const DAY = 86_400_000;
const US_FROM = Date.UTC(2025, 0, 1);
const ARCHIVE_PATH =
  /^\/data\/spot\/(monthly|daily)\/klines\/([A-Z0-9]+)\/1m\/\2-1m-(\d{4}-\d{2}(?:-\d{2})?)\.zip(\.CHECKSUM)?$/;

/**
 * A local stand-in for data.binance.vision: monthly and daily 1m kline zips of any USDT pair, as
 * Binance publishes them (one CSV entry without a header, 12 columns, open times in ms up to 2024
 * and in µs from 2025 on), each with its .CHECKSUM ("<sha256>  <name>"). The candles are those
 * FakeBinance serves over REST for the same minutes, so both sources agree.
 */
export class FakeBinanceArchive {
  /** Pathnames asked for, in order. */
  readonly requests: string[] = [];
  /** Archives (by file name) that answer 404. */
  readonly missing = new Set<string>();
  /** Archives (by file name) whose bytes do not match their .CHECKSUM. */
  readonly corrupt = new Set<string>();
  /** Archives (by file name) whose zip is never answered (a stalled download). */
  readonly hang = new Set<string>();
  /** 429s with Retry-After (seconds) for the next requests. */
  readonly throttles: number[] = [];
  /** Candles exist from this instant (the pair's listing)… */
  listedFrom = Date.UTC(2017, 0, 1);
  /** …and archives are published for periods that ended by this instant. */
  publishedUntil = Math.floor(Date.now() / DAY) * DAY;
  private readonly zips = new Map<string, Buffer>();
  private server: Server | null = null;
  url = '';

  async start() {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop() {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  /** Zip downloads (not .CHECKSUM) asked for so far. */
  zipRequests(): string[] {
    return this.requests.filter((p) => p.endsWith('.zip'));
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const path = req.url ?? '/';
    this.requests.push(path);
    const retryAfter = this.throttles.shift();
    if (retryAfter !== undefined) {
      res.writeHead(429, { 'retry-after': String(retryAfter) });
      return res.end('Too Many Requests');
    }
    const match = ARCHIVE_PATH.exec(path);
    if (!match) return this.notFound(res);
    const [, kind = '', symbol = '', period = '', checksum] = match;
    const name = `${symbol}-1m-${period}.zip`;
    const [fromMs, toMs] = periodRange(kind, period);
    if (this.missing.has(name) || toMs > this.publishedUntil || toMs <= this.listedFrom) {
      return this.notFound(res);
    }
    if (!checksum && this.hang.has(name)) return; // answered by stop(), which drops the socket
    const zip = await this.zip(name, Math.max(fromMs, this.listedFrom), toMs);
    if (checksum) {
      const hashed = this.corrupt.has(name) ? Buffer.concat([zip, Buffer.from('x')]) : zip;
      const hex = createHash('sha256').update(hashed).digest('hex');
      res.writeHead(200, { 'content-type': 'text/plain' });
      return res.end(`${hex}  ${name}\n`);
    }
    res.writeHead(200, { 'content-type': 'application/zip', 'content-length': zip.length });
    res.end(zip);
  }

  private async zip(name: string, fromMs: number, toMs: number): Promise<Buffer> {
    const cached = this.zips.get(name);
    if (cached) return cached;
    const lines: string[] = [];
    for (let t = fromMs; t < toMs; t += MINUTE) lines.push(klineLine(t));
    const zip = new yazl.ZipFile();
    zip.addBuffer(Buffer.from(`${lines.join('\n')}\n`), name.replace(/\.zip$/, '.csv'));
    zip.end();
    const bytes = await buffer(zip.outputStream);
    this.zips.set(name, bytes);
    return bytes;
  }

  private notFound(res: ServerResponse) {
    // S3's answer for a key that does not exist.
    res.writeHead(404, { 'content-type': 'application/xml' });
    res.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code></Error>');
  }
}

function periodRange(kind: string, period: string): [number, number] {
  const [y = 0, m = 1, d = 1] = period.split('-').map(Number);
  if (kind === 'daily') return [Date.UTC(y, m - 1, d), Date.UTC(y, m - 1, d) + DAY];
  return [Date.UTC(y, m - 1, 1), Date.UTC(y, m, 1)];
}

/** One archive row; Binance's spot archives carry µs from 2025-01-01 on, ms before. */
function klineLine(t: number): string {
  return binanceKlineLine(t, klineValues(t / MINUTE, 40_000), t >= US_FROM ? 1000 : 1, 42);
}
