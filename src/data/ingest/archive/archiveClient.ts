import { createHash } from 'node:crypto';
import { PatientHttp, type PatientHttpOptions } from '../exchange/patientHttp.ts';
import type { ArchivePeriodPart } from './archivePlan.ts';

// Binance's public kline archives (data.binance.vision): one zip per symbol, interval and month
// (data/spot/monthly/klines/BTCUSDT/1m/BTCUSDT-1m-2024-01.zip) or day (…/daily/…-2024-01-15.zip),
// each with a `.CHECKSUM` beside it: "<sha256 hex>  <file name>". The zip is held in memory (a
// monthly 1m archive is a few MB) so its checksum is verified before a single row is read from it;
// nothing is written to disk.

export class ArchiveChecksumError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ArchiveChecksumError';
  }
}

export interface DownloadedArchive {
  /** Path under the base URL, e.g. data/spot/monthly/klines/BTCUSDT/1m/BTCUSDT-1m-2024-01.zip */
  path: string;
  name: string;
  bytes: Buffer;
  sha256: string;
}

export interface ArchiveClientOptions extends PatientHttpOptions {
  baseUrl: string;
}

/** The archive's path under the base URL, which is also what names its completion record. */
export function archivePath(symbol: string, interval: string, part: ArchivePeriodPart): string {
  const name = `${symbol}-${interval}-${part.period}.zip`;
  return `data/spot/${part.kind}/klines/${symbol}/${interval}/${name}`;
}

export class BinanceArchiveClient {
  private readonly baseUrl: string;
  private readonly http: PatientHttp;

  constructor(options: ArchiveClientOptions) {
    const { baseUrl, ...http } = options;
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.http = new PatientHttp('Binance archive', http);
  }

  /**
   * Downloads one archive and checks it against its .CHECKSUM; null when the archive is not
   * published (404: the period is not over yet, or before the pair's listing). Throws
   * ArchiveChecksumError when the bytes are not what the checksum says.
   */
  async download(path: string): Promise<DownloadedArchive | null> {
    const name = path.slice(path.lastIndexOf('/') + 1);
    const checksumText = await this.http.getBytes(`${this.baseUrl}/${path}.CHECKSUM`);
    if (!checksumText) return null;
    const expected = parseChecksum(checksumText.toString('utf8'), name);
    const bytes = await this.http.getBytes(`${this.baseUrl}/${path}`);
    if (!bytes) return null;
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    if (sha256 !== expected) {
      throw new ArchiveChecksumError(
        `${name} does not match its .CHECKSUM (sha256 ${sha256}, expected ${expected}); refused, nothing loaded from it`,
      );
    }
    return { path, name, bytes, sha256 };
  }
}

/** "<64 hex>  <file name>": the sha256 of the named file, which must be the archive itself. */
export function parseChecksum(text: string, name: string): string {
  const match = /^([0-9a-f]{64})\s+\*?(\S+)\s*$/i.exec(text.trim());
  if (!match) {
    throw new ArchiveChecksumError(
      `${name}.CHECKSUM is not "<sha256>  <file name>"; refused, nothing loaded from it`,
    );
  }
  const [, hex = '', named = ''] = match;
  if (named !== name) {
    throw new ArchiveChecksumError(
      `${name}.CHECKSUM names ${named}, not ${name}; refused, nothing loaded from it`,
    );
  }
  return hex.toLowerCase();
}
