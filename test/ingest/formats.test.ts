import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { dedicatedConnection } from '../../src/data/ingest/connection.ts';
import { importFile } from '../../src/data/ingest/importFile.ts';
import { insertCandles } from '../support/prices.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import {
  BINANCE_HEADER,
  binanceLines,
  klineValues,
  MINUTE,
  tempDir,
  writeZip,
} from './fixtures.ts';

let runtime: TestRuntime;
let files: Awaited<ReturnType<typeof tempDir>>;
let load: (
  path: string,
  options?: Parameters<typeof importFile>[2],
) => ReturnType<typeof importFile>;

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  files = await tempDir();
  const connect = dedicatedConnection(runtime.config.DATABASE_URL);
  load = (path, options) => importFile(connect, path, options);
});

afterAll(async () => {
  await files.remove();
  await runtime.dispose();
});

const rowSchema = z.object({
  time: z.date(),
  open: z.number(),
  high: z.number(),
  low: z.number(),
  close: z.number(),
  volume: z.number(),
  source: z.string(),
});

function rows(code: string, from: Date, to: Date) {
  return runtime.pool.any(sql.type(rowSchema)`
    SELECT time, open, high, low, close, volume, source FROM price_observations
    WHERE currency_code = ${code} AND time >= ${sql.timestamp(from)} AND time < ${sql.timestamp(to)}
    ORDER BY time`);
}

function count(code: string) {
  return runtime.pool.oneFirst(
    sql.type(
      z.object({ n: z.number() }),
    )`SELECT count(*)::int AS n FROM price_observations WHERE currency_code = ${code}`,
  );
}

describe('Binance kline archives', () => {
  const jan2024 = Date.UTC(2024, 0, 1);
  const jan2025 = Date.UTC(2025, 0, 1);

  test('a monthly zip from 2024 (ms timestamps) loads every candle with its exact values', async () => {
    const path = join(files.dir, 'BTCUSDT-1m-2024-01.zip');
    await writeZip(path, {
      'BTCUSDT-1m-2024-01.csv': `${binanceLines(jan2024, 500).join('\n')}\n`,
    });
    const result = await load(path);
    expect(result).toMatchObject({
      status: 'loaded',
      read: 500,
      inserted: 500,
      duplicates: 0,
      rejected: 0,
      path: 'direct',
    });
    const stored = await rows('BTC', new Date(jan2024), new Date(jan2024 + 500 * MINUTE));
    expect(stored).toHaveLength(500);
    const expected = klineValues(123);
    expect(stored[123]).toEqual({
      time: new Date(jan2024 + 123 * MINUTE),
      open: Number(expected.open.toFixed(8)),
      high: Number(expected.high.toFixed(8)),
      low: Number(expected.low.toFixed(8)),
      close: Number(expected.close.toFixed(8)),
      volume: Number(expected.volume.toFixed(8)),
      source: 'binance',
    });
  });

  test('a 2025 daily zip with µs timestamps and a header row lands at the same instants', async () => {
    const path = join(files.dir, 'ETHUSDT-1m-2025-01-01.zip');
    const lines = binanceLines(jan2025, 1440, 'us', 3000);
    await writeZip(path, {
      'ETHUSDT-1m-2025-01-01.csv': `${BINANCE_HEADER}\n${lines.join('\n')}\n`,
    });
    expect(lines[0]?.startsWith('1735689600000000,')).toBe(true);
    const result = await load(path);
    expect(result).toMatchObject({ status: 'loaded', read: 1440, inserted: 1440, rejected: 0 });
    const stored = await rows('ETH', new Date(jan2025), new Date(jan2025 + 86_400_000));
    expect(stored).toHaveLength(1440);
    expect(stored[0]?.time).toEqual(new Date(jan2025));
    expect(stored[1439]?.time).toEqual(new Date(jan2025 + 1439 * MINUTE));
  });

  test('the unit is detected per file: the same candles in ms and in µs are the same rows', async () => {
    const start = Date.UTC(2023, 5, 1);
    const ms = await files.file(
      'SOLUSDT-1m-2023-06-01.csv',
      binanceLines(start, 60, 'ms', 20).join('\n'),
    );
    expect(await load(ms)).toMatchObject({ inserted: 60 });
    const usDir = join(files.dir, 'us');
    await (await import('node:fs/promises')).mkdir(usDir);
    const us = join(usDir, 'SOLUSDT-1m-2023-06-01.csv');
    await writeFile(us, binanceLines(start, 60, 'us', 20).join('\n'));
    expect(await load(us)).toMatchObject({
      status: 'loaded',
      read: 60,
      inserted: 0,
      duplicates: 60,
    });
  });

  test('a row in another unit than the file’s first row is rejected, not misdated', async () => {
    const start = Date.UTC(2023, 7, 1);
    const lines = binanceLines(start, 10, 'ms', 0.5);
    lines[4] = binanceLines(start + 4 * MINUTE, 1, 'us', 0.5)[0] as string;
    const path = await files.file('XRPUSDT-1m-2023-08-01.csv', lines.join('\n'));
    const result = await load(path);
    expect(result).toMatchObject({ status: 'loaded', inserted: 9, rejected: 1 });
    expect(result.rejections[0]).toEqual({
      file: path,
      line: 5,
      reason: expect.stringContaining('microseconds but this file'),
    });
  });

  test('reloading a completed file is skipped; --force reloads it and adds nothing', async () => {
    const path = join(files.dir, 'BTCUSDT-1m-2024-01.zip');
    const before = await count('BTC');
    expect(await load(path)).toMatchObject({ status: 'skipped', read: 0, inserted: 0 });
    expect(await load(path, { force: true })).toMatchObject({
      status: 'loaded',
      read: 500,
      inserted: 0,
      duplicates: 500,
      path: 'merge',
    });
    expect(await count('BTC')).toBe(before);
  });

  test('a zip whose .CHECKSUM does not match is refused', async () => {
    const path = join(files.dir, 'ADAUSDT-1m-2024-02.zip');
    await writeZip(path, {
      'ADAUSDT-1m-2024-02.csv': binanceLines(Date.UTC(2024, 1, 1), 5, 'ms', 1).join('\n'),
    });
    await writeFile(`${path}.CHECKSUM`, `${'0'.repeat(64)}  ADAUSDT-1m-2024-02.zip\n`);
    const result = await load(path);
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(/CHECKSUM/);
    expect(await count('ADA')).toBe(0);
    const sum = createHash('sha256')
      .update(await readFile(path))
      .digest('hex');
    await writeFile(`${path}.CHECKSUM`, `${sum}  ADAUSDT-1m-2024-02.zip\n`);
    expect(await load(path)).toMatchObject({ status: 'loaded', inserted: 5 });
  });

  test('a damaged zip and an unknown pair fail with a reason and write nothing', async () => {
    const damaged = await files.file(
      'DOGEUSDT-1m-2024-03.zip',
      'PK\u0003\u0004 definitely not a zip',
    );
    expect(await load(damaged)).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/zip/),
    });
    const unknown = join(files.dir, 'ZZZZUSDT-1m-2024-03.zip');
    await writeZip(unknown, {
      'ZZZZUSDT-1m-2024-03.csv': binanceLines(Date.UTC(2024, 2, 1), 3).join('\n'),
    });
    expect(await load(unknown)).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/unknown currency 'ZZZZUSDT'/),
    });
  });
});

describe('generic CSV and NDJSON', () => {
  test('CSV candles with ISO times, any column order, optional volume', async () => {
    const path = await files.file(
      'candles.csv',
      'close,open,time,high,code,low\n' +
        '101,100,2022-03-01T00:00:00Z,102,LINK,99\n' +
        '102,101,2022-03-01 00:01:00,103,link,100\n' + // no zone: UTC; lower-case code
        '"103",102,2022-03-01T01:02:00+01:00,104,LINK,101\n', // quoted field, a zone
    );
    expect(await load(path)).toMatchObject({
      status: 'loaded',
      read: 3,
      inserted: 3,
      rejected: 0,
      path: 'direct',
    });
    const stored = await rows(
      'LINK',
      new Date('2022-03-01T00:00:00Z'),
      new Date('2022-03-02T00:00:00Z'),
    );
    expect(stored.map((r) => r.time.toISOString())).toEqual([
      '2022-03-01T00:00:00.000Z',
      '2022-03-01T00:01:00.000Z',
      '2022-03-01T00:02:00.000Z',
    ]);
    expect(stored[2]).toMatchObject({
      open: 102,
      high: 104,
      low: 101,
      close: 103,
      volume: 0,
      source: 'csv',
    });
  });

  test('CSV ticks with epoch seconds, and with epoch milliseconds', async () => {
    const seconds = await files.file(
      'ticks-s.csv',
      'timestamp,symbol,price,volume\n1646092800,AVAX,85.5,12\n1646092860,AVAX,86,\n',
    );
    expect(await load(seconds)).toMatchObject({ inserted: 2 });
    const millis = await files.file('ticks-ms.csv', 'time,code,price\n1646092920000,AVAX,86.5\n');
    expect(await load(millis)).toMatchObject({ inserted: 1 });
    const stored = await rows('AVAX', new Date(0), new Date('2030-01-01'));
    expect(stored.map((r) => [r.time.toISOString(), r.open, r.close, r.volume])).toEqual([
      ['2022-03-01T00:00:00.000Z', 85.5, 85.5, 12],
      ['2022-03-01T00:01:00.000Z', 86, 86, 0],
      ['2022-03-01T00:02:00.000Z', 86.5, 86.5, 0],
    ]);
  });

  test('NDJSON candles and ticks, numbers as numbers or strings, µs precision kept', async () => {
    const path = await files.file(
      'prices.ndjson',
      [
        '{"code":"DOT","time":"2021-05-01T00:00:00.123456Z","price":40}',
        '',
        '{"code":"DOT","time":1619827260000,"open":"40","high":"41.5","low":"39.5","close":"41","volume":"7"}',
      ].join('\n'),
    );
    expect(await load(path)).toMatchObject({
      status: 'loaded',
      read: 2,
      inserted: 2,
    });
    const micros = await runtime.pool.anyFirst(
      sql.type(
        z.object({ us: z.string() }),
      )`SELECT to_char(time AT TIME ZONE 'UTC', 'SS.US') AS us FROM price_observations WHERE currency_code = 'DOT' ORDER BY time`,
    );
    expect(micros).toEqual(['00.123456', '00.000000']);
  });

  test('malformed rows are reported with file and line and skipped; the rest is stored', async () => {
    const path = await files.file(
      'mixed.csv',
      [
        'time,code,open,high,low,close,volume',
        '2021-01-01T00:00:00Z,BNB,40,41,39,40.5,1', // 2 ok
        '2021-01-01T00:01:00Z,BNB,abc,41,39,40.5,1', // 3 open not a number
        '2021-01-01T00:02:00Z,NOTACOIN,40,41,39,40.5,1', // 4 unknown currency
        'yesterday,BNB,40,41,39,40.5,1', // 5 bad time
        '2021-01-01T00:04:00Z,BNB,40,39,41,40.5,1', // 6 high below low
        '2021-01-01T00:05:00Z,BNB,40,41,39', // 7 missing columns
        '2021-01-01T00:06:00Z,BNB,-1,41,39,40.5,1', // 8 negative price
        '2021-01-01T00:07:00Z,BNB,40,41,39,40.5,-3', // 9 negative volume
        '2099-01-01T00:00:00Z,BNB,40,41,39,40.5,1', // 10 future
        '2021-01-01T00:09:00Z,BNB,40,41,39,40.5,1', // 11 ok
      ].join('\n'),
    );
    const result = await load(path);
    expect(result).toMatchObject({ status: 'loaded', read: 10, inserted: 2, rejected: 8 });
    expect(result.rejections.map((r) => [r.file, r.line])).toEqual(
      [3, 4, 5, 6, 7, 8, 9, 10].map((line) => [path, line]),
    );
    expect(result.rejections.map((r) => r.reason)).toEqual([
      'open is not a number',
      "unknown currency 'NOTACOIN'",
      expect.stringContaining("time 'yesterday'"),
      'high is below low',
      'expected 7 columns, found 5',
      'prices must be positive numbers',
      'volume must be a number ≥ 0',
      'time is in the future',
    ]);
    expect(await count('BNB')).toBe(2);
  });

  test('--strict rejects the whole file and writes nothing of it', async () => {
    const path = await files.file(
      'strict.csv',
      'time,code,price\n2020-01-01T00:00:00Z,TRX,0.01\n2020-01-01T00:01:00Z,TRX,zero\n2020-01-01T00:02:00Z,TRX,0.02\n',
    );
    const result = await load(path, { strict: true });
    expect(result).toMatchObject({ status: 'rejected', read: 3, inserted: 0, rejected: 1 });
    expect(result.rejections).toEqual([{ file: path, line: 3, reason: 'price is not a number' }]);
    expect(await count('TRX')).toBe(0);
    const recorded = await runtime.pool.exists(
      sql.unsafe`SELECT 1 FROM ingest_units WHERE label = ${path}`,
    );
    expect(recorded).toBe(false);
  });

  test('a file without a usable header fails as a whole', async () => {
    const path = await files.file('headless.csv', '2020-01-01T00:00:00Z,TRX,0.01\n');
    expect(await load(path)).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/header names no time column/),
    });
  });

  test('rows overlapping stored ones: stored rows win, the new ones are added', async () => {
    const t0 = Date.UTC(2019, 0, 1);
    await insertCandles(
      runtime.pool,
      [{ code: 'XLM', time: new Date(t0 + MINUTE), open: 7 }],
      'harvester',
    );
    const lines = ['time,code,price'];
    for (let i = 0; i < 5; i++)
      lines.push(`${new Date(t0 + i * MINUTE).toISOString()},XLM,${i + 1}`);
    const result = await load(await files.file('overlap.csv', lines.join('\n')));
    expect(result).toMatchObject({
      status: 'loaded',
      read: 5,
      inserted: 4,
      duplicates: 1,
      path: 'merge',
    });
    const stored = await rows('XLM', new Date(t0), new Date(t0 + 10 * MINUTE));
    expect(stored.map((r) => [r.open, r.source])).toEqual([
      [1, 'csv'],
      [7, 'harvester'],
      [3, 'csv'],
      [4, 'csv'],
      [5, 'csv'],
    ]);
  });

  test('repeated rows inside one file are stored once', async () => {
    const path = await files.file(
      'repeat.csv',
      'time,code,price\n2018-01-01T00:00:00Z,SUI,1\n2018-01-01T00:00:00Z,SUI,2\n',
    );
    expect(await load(path)).toMatchObject({ inserted: 1, duplicates: 1 });
  });
});

describe('touched ranges and completion records', () => {
  test('each load marks the ranges it wrote, split where the data has gaps', async () => {
    const path = await files.file(
      'gaps.csv',
      'time,code,price\n2017-01-01T00:00:00Z,UNI,5\n2017-01-01T00:10:00Z,UNI,5\n2017-03-01T00:00:00Z,UNI,6\n',
    );
    await load(path);
    const marks = await runtime.pool.any(
      sql.type(z.object({ range_start: z.date(), range_end: z.date() }))`
        SELECT range_start, range_end FROM price_invalidations WHERE currency_code = 'UNI' ORDER BY range_start`,
    );
    expect(marks).toEqual([
      {
        range_start: new Date('2017-01-01T00:00:00Z'),
        range_end: new Date('2017-01-01T00:10:00Z'),
      },
      {
        range_start: new Date('2017-03-01T00:00:00Z'),
        range_end: new Date('2017-03-01T00:00:00Z'),
      },
    ]);
  });

  test('a merge marks only what it really inserted', async () => {
    const path = await files.file(
      'gaps-again.csv',
      'time,code,price\n2017-01-01T00:10:00Z,UNI,5\n2017-01-02T00:00:00Z,UNI,5\n',
    );
    await load(path);
    const marks = await runtime.pool.any(
      sql.type(z.object({ range_start: z.date(), range_end: z.date() }))`
        SELECT range_start, range_end FROM price_invalidations WHERE currency_code = 'UNI' ORDER BY id DESC LIMIT 1`,
    );
    expect(marks).toEqual([
      {
        range_start: new Date('2017-01-02T00:00:00Z'),
        range_end: new Date('2017-01-02T00:00:00Z'),
      },
    ]);
  });

  test('a completed file is recorded with its counts and content hash', async () => {
    const text = 'time,code,price\n2016-01-01T00:00:00Z,LTC,3.5\n2016-01-01T00:01:00Z,LTC,oops\n';
    const path = await files.file('record.csv', text);
    await load(path);
    const record = await runtime.pool.one(
      sql.type(
        z.object({
          content_sha256: z.string(),
          rows_read: z.number(),
          rows_inserted: z.number(),
          rows_rejected: z.number(),
          rejections: z.unknown(),
        }),
      )`
        SELECT content_sha256, rows_read, rows_inserted, rows_rejected, rejections FROM ingest_units WHERE label = ${path}`,
    );
    expect(record).toEqual({
      content_sha256: createHash('sha256').update(text).digest('hex'),
      rows_read: 2,
      rows_inserted: 1,
      rows_rejected: 1,
      rejections: [{ line: 3, reason: 'price is not a number' }],
    });
  });
});
