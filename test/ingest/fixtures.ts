import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import yazl from 'yazl';

export const MINUTE = 60_000;

/** A price path that stays positive and keeps open/close inside [low, high]. */
export function klineValues(i: number, base = 42_000) {
  const open = base * (1 + 0.02 * Math.sin(i / 10) + i * 1e-6);
  const close = open * (1 + 0.001 * Math.cos(i / 7));
  const high = Math.max(open, close) * 1.0005;
  const low = Math.min(open, close) * 0.9995;
  const volume = 10 + (i % 17) * 0.5;
  return { open, high, low, close, volume };
}

/**
 * Lines in Binance's kline CSV format (12 columns, prices with 8 decimals). `unit` is the
 * timestamp unit: 'ms' as in files up to 2024, 'us' as in spot files from 2025 on.
 */
export function binanceLines(
  startMs: number,
  count: number,
  unit: 'ms' | 'us' = 'ms',
  base = 42_000,
) {
  const scale = unit === 'us' ? 1000 : 1;
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    lines.push(binanceKlineLine(startMs + i * MINUTE, klineValues(i, base), scale, 100 + i));
  }
  return lines;
}

/** One kline CSV line of the minute starting at `t` (ms); `scale` 1000 writes microseconds. */
export function binanceKlineLine(
  t: number,
  v: ReturnType<typeof klineValues>,
  scale: number,
  trades: number,
): string {
  return [
    t * scale,
    v.open.toFixed(8),
    v.high.toFixed(8),
    v.low.toFixed(8),
    v.close.toFixed(8),
    v.volume.toFixed(8),
    (t + MINUTE) * scale - 1,
    (v.volume * v.close).toFixed(8),
    trades,
    (v.volume / 2).toFixed(8),
    ((v.volume / 2) * v.close).toFixed(8),
    0,
  ].join(',');
}

export const BINANCE_HEADER =
  'open_time,open,high,low,close,volume,close_time,quote_volume,count,taker_buy_volume,taker_buy_quote_volume,ignore';

export async function writeZip(path: string, entries: Record<string, string>) {
  const zip = new yazl.ZipFile();
  for (const [name, text] of Object.entries(entries)) zip.addBuffer(Buffer.from(text), name);
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(path));
}

export async function tempDir(): Promise<{
  dir: string;
  file(name: string, text: string): Promise<string>;
  remove(): Promise<void>;
}> {
  const dir = await mkdtemp(join(tmpdir(), 'ingest-test-'));
  return {
    dir,
    async file(name, text) {
      const path = join(dir, name);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, text);
      return path;
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
