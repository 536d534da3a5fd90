import { describe, expect, test } from '@jest/globals';
import { CodeResolver } from '../../src/data/ingest/codes.ts';
import { splitCsvLine } from '../../src/data/ingest/csvFields.ts';
import { readLineBatches } from '../../src/data/ingest/lines.ts';
import { RangeTracker } from '../../src/data/ingest/rangeTracker.ts';
import { codeFromSymbol, parseBinanceFileName } from '../../src/data/ingest/symbols.ts';
import { epochUnitOf, parseIsoMicros, TimeParser } from '../../src/data/ingest/timeParsing.ts';

async function lines(chunks: Buffer[]) {
  const out: Array<[number, string | null]> = [];
  async function* source() {
    yield* chunks;
  }
  for await (const batch of readLineBatches(source())) {
    batch.lines.forEach((line, i) => out.push([batch.firstLine + i, line]));
  }
  return out;
}

describe('time parsing', () => {
  test.each([
    [1_704_067_200, 's'],
    [1_704_067_200_000, 'ms'],
    [1_735_689_600_000_000, 'us'],
    [1_735_689_600_000_000_000, 'ns'],
  ])('%d is in %s', (value, unit) => {
    expect(epochUnitOf(value)).toBe(unit);
  });

  test('every unit lands on the same instant', () => {
    const expected = Date.UTC(2025, 0, 1) * 1000;
    for (const text of ['1735689600', '1735689600000', '1735689600000000', '1735689600000000000']) {
      expect(new TimeParser().parse(text)).toBe(expected);
    }
  });

  test('the first epoch value fixes the unit of the file', () => {
    const time = new TimeParser();
    expect(time.parse('1704067200000')).toBe(1_704_067_200_000_000);
    expect(time.parse('1704067260000000')).toMatch(
      /microseconds but this file's timestamps are in milliseconds/,
    );
    expect(time.parse('2024-01-01T00:02:00Z')).toBe(1_704_067_320_000_000);
  });

  test('ISO 8601: zone, no zone (UTC), space separator, date only, µs fractions', () => {
    expect(parseIsoMicros('2024-01-01T00:00:00Z')).toBe(1_704_067_200_000_000);
    expect(parseIsoMicros('2024-01-01 00:00:00')).toBe(1_704_067_200_000_000);
    expect(parseIsoMicros('2024-01-01T02:00:00+02:00')).toBe(1_704_067_200_000_000);
    expect(parseIsoMicros('2024-01-01')).toBe(1_704_067_200_000_000);
    expect(parseIsoMicros('2024-01-01T00:00:00.123456Z')).toBe(1_704_067_200_123_456);
    expect(parseIsoMicros('2024-01-01T00:00:00.5Z')).toBe(1_704_067_200_500_000);
    expect(parseIsoMicros('January 1, 2024')).toBeNull();
    expect(parseIsoMicros('2024-13-01')).toBeNull();
  });
});

describe('symbols and codes', () => {
  test('pairs quoted in dollars map to the base currency', () => {
    expect(codeFromSymbol('BTCUSDT')).toBe('BTC');
    expect(codeFromSymbol('ETHFDUSD')).toBe('ETH');
    expect(codeFromSymbol('SOLUSDC')).toBe('SOL');
    expect(codeFromSymbol('ETHBTC')).toBeNull();
  });

  test('Binance archive names give pair, interval and period', () => {
    expect(parseBinanceFileName('BTCUSDT-1m-2025-01.zip')).toEqual({
      symbol: 'BTCUSDT',
      code: 'BTC',
      interval: '1m',
      from: new Date('2025-01-01T00:00:00Z'),
      to: new Date('2025-02-01T00:00:00Z'),
    });
    expect(parseBinanceFileName('ETHUSDT-1h-2024-12-31.csv')?.to).toEqual(
      new Date('2025-01-01T00:00:00Z'),
    );
    expect(parseBinanceFileName('prices.csv')).toBeNull();
  });

  test('codes resolve against the known list, case-insensitively, pairs included', () => {
    const codes = new CodeResolver(new Set(['BTC', 'USDT']));
    expect(codes.resolve(' btc ')).toEqual({ code: 'BTC' });
    expect(codes.resolve('BTCUSDT')).toEqual({ code: 'BTC' });
    expect(codes.resolve('USDT')).toEqual({ code: 'USDT' });
    expect(codes.resolve('XYZ')).toEqual({ reason: "unknown currency 'XYZ'" });
    expect(codes.resolve('B-T-C')).toEqual({
      reason: "code 'B-T-C' is not 1 to 15 letters or digits",
    });
  });
});

describe('lines and fields', () => {
  test('BOM, CRLF, a multi-byte character split across chunks, no final newline', async () => {
    const text = Buffer.from('\uFEFFa,b\r\nx,€\r\n\nlast');
    const euro = text.indexOf(0xe2);
    expect(await lines([text.subarray(0, euro + 1), text.subarray(euro + 1)])).toEqual([
      [1, 'a,b'],
      [2, 'x,€'],
      [3, ''],
      [4, 'last'],
    ]);
  });

  test('an endless line is cut off and reported as null, the next line survives', async () => {
    const huge = Buffer.alloc(200 * 1024, 'x');
    expect(await lines([Buffer.from('ok\n'), huge, Buffer.from('\nafter\n')])).toEqual([
      [1, 'ok'],
      [2, null],
      [3, 'after'],
    ]);
  });

  test('CSV fields: plain split, RFC 4180 quoting, broken quoting', () => {
    expect(splitCsvLine('a,b,,c')).toEqual(['a', 'b', '', 'c']);
    expect(splitCsvLine('"a,1","say ""hi""",3')).toEqual(['a,1', 'say "hi"', '3']);
    expect(splitCsvLine('"unterminated,1')).toBeNull();
  });
});

describe('touched ranges', () => {
  test('rows within a day extend a range; gaps split it; unsorted input is merged', () => {
    const tracker = new RangeTracker();
    const day = 86_400_000_000;
    const t0 = Date.UTC(2024, 0, 1) * 1000;
    for (const t of [t0, t0 + 60e6, t0 + 10 * day, t0 + 120e6, t0 + 10 * day + 60e6])
      tracker.add('BTC', t);
    tracker.add('ETH', t0);
    expect(tracker.ranges()).toEqual([
      { code: 'BTC', from: new Date(t0 / 1000), to: new Date(t0 / 1000 + 120_000) },
      {
        code: 'BTC',
        from: new Date(t0 / 1000 + 10 * 86_400_000),
        to: new Date(t0 / 1000 + 10 * 86_400_000 + 60_000),
      },
      { code: 'ETH', from: new Date(t0 / 1000), to: new Date(t0 / 1000) },
    ]);
  });
});
