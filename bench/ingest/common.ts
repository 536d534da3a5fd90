// What the ingestion benchmarks share: the generated CSV of one-minute candles and fresh,
// migrated databases on the benchmark server.
import { once } from 'node:events';
import { createWriteStream, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { benchDatabaseUrl, recreateDatabase } from '../shared/databases.ts';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const out = join(root, 'bench', 'out');
export const CODES = ['BTC', 'ETH', 'SOL', 'XRP', 'ADA', 'DOGE', 'BNB', 'TRX', 'LINK', 'AVAX'];
/** The first minute of every generated file. */
export const START_MS = Date.UTC(2015, 0, 1);

export const dbUrl = benchDatabaseUrl;

export const csvPathFor = (rows: number) => join(out, `candles-${rows}.csv`);

/** `rows` candles, minute by minute from START_MS, each minute for every code in turn. */
export async function generateCsv(rows: number): Promise<string> {
  const path = csvPathFor(rows);
  if (existsSync(path)) return path;
  mkdirSync(out, { recursive: true });
  const file = createWriteStream(path);
  file.write('time,code,open,high,low,close,volume\n');
  const perCode = Math.ceil(rows / CODES.length);
  let buffer = '';
  let written = 0;
  for (let i = 0; i < perCode && written < rows; i++) {
    const time = new Date(START_MS + i * 60_000).toISOString();
    for (let c = 0; c < CODES.length && written < rows; c++) {
      const base = 10 + c * 100 + 5 * Math.sin(i / 500);
      const close = base * (1 + 0.001 * Math.cos(i / 7));
      const high = Math.max(base, close) * 1.0005;
      const low = Math.min(base, close) * 0.9995;
      buffer += `${time},${CODES[c]},${base.toFixed(6)},${high.toFixed(6)},${low.toFixed(6)},${close.toFixed(6)},${(i % 1000) / 10}\n`;
      written++;
    }
    if (buffer.length > 1 << 20) {
      if (!file.write(buffer)) await once(file, 'drain');
      buffer = '';
    }
  }
  file.end(buffer);
  await once(file, 'finish');
  return path;
}

/** A new, migrated database holding the benchmark's currencies; returns its URL. */
export async function freshDatabase(name: string): Promise<string> {
  await recreateDatabase(name);
  await query(
    dbUrl(name),
    `INSERT INTO currencies (code, name) SELECT unnest($1::text[]), unnest($1::text[])`,
    [CODES],
  );
  return dbUrl(name);
}

export async function query(url: string, text: string, values: unknown[] = []) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(text, values);
  } finally {
    await client.end();
  }
}

export async function count(url: string, table = 'price_observations'): Promise<number> {
  const { rows } = await query(url, `SELECT count(*)::bigint AS n FROM ${table}`);
  return Number(rows[0].n);
}
