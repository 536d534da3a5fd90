import { toNumber } from '../candleValidation.ts';
import type { CodeResolver } from '../codes.ts';
import { splitCsvLine } from '../csvFields.ts';
import type { LineBatch } from '../lines.ts';
import { clip, TimeParser } from '../timeParsing.ts';
import type { Candle, ReadBatch, Rejection } from '../types.ts';

// Line parsers turn one batch of lines into candles and rejected rows. They are synchronous and
// keep per-file state (header, detected time unit) in their closure.

export type LineParser = (batch: LineBatch) => ReadBatch;

/** A problem with a whole file (no usable header, unknown pair): nothing of it can be loaded. */
export class FileFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FileFormatError';
  }
}

const TOO_LONG = 'line is too long to be a price row';

const PRICE_FIELDS = ['open', 'high', 'low', 'close', 'volume'] as const;

/** Builds a candle from numeric fields, or says which field is not a number. */
function candleFrom(
  code: string,
  timeUs: number,
  values: [number, number, number, number, number],
  line: number,
): Candle | string {
  for (let i = 0; i < 5; i++) {
    if (Number.isNaN(values[i])) return `${PRICE_FIELDS[i]} is not a number`;
  }
  const [open, high, low, close, volume] = values;
  return { code, timeUs, open, high, low, close, volume, line };
}

function collector(
  file: string,
  bytes: number,
): ReadBatch & { reject(line: number, reason: string): void } {
  const rejections: Rejection[] = [];
  return {
    file,
    candles: [],
    rejections,
    bytes,
    reject(line, reason) {
      rejections.push({ file, line, reason });
    },
  };
}

/**
 * Binance kline CSV: open time, open, high, low, close, volume, close time, quote volume, trades,
 * taker base, taker quote, ignore. Some files start with a header row. Open times are ms until
 * 2024 and µs from 2025 on; the unit is detected from the file's first row.
 */
export function binanceKlineParser(file: string, code: string): LineParser {
  const time = new TimeParser();
  let sawFirstLine = false;
  return (batch) => {
    const out = collector(file, batch.bytes);
    for (let i = 0; i < batch.lines.length; i++) {
      const line = batch.lines[i] as string | null;
      const lineNo = batch.firstLine + i;
      if (line === '') continue;
      if (line === null) {
        out.reject(lineNo, TOO_LONG);
        continue;
      }
      if (!sawFirstLine) {
        sawFirstLine = true;
        if (/^\s*[a-z_]/i.test(line)) continue; // header row
      }
      const f = splitCsvLine(line);
      if (!f || f.length < 6) {
        out.reject(lineNo, `expected 12 comma-separated kline columns, found ${f?.length ?? 0}`);
        continue;
      }
      const openTime = toNumber(f[0]);
      if (Number.isNaN(openTime)) {
        out.reject(lineNo, `open time '${clip(f[0] ?? '')}' is not a number`);
        continue;
      }
      const timeUs = time.parseEpoch(openTime);
      if (typeof timeUs === 'string') {
        out.reject(lineNo, timeUs);
        continue;
      }
      const candle = candleFrom(
        code,
        timeUs,
        [toNumber(f[1]), toNumber(f[2]), toNumber(f[3]), toNumber(f[4]), toNumber(f[5])],
        lineNo,
      );
      if (typeof candle === 'string') out.reject(lineNo, candle);
      else out.candles.push(candle);
    }
    return out;
  };
}

const HEADER_ALIASES: Record<string, string> = {
  time: 'time',
  timestamp: 'time',
  date: 'time',
  datetime: 'time',
  open_time: 'time',
  opentime: 'time',
  ts: 'time',
  code: 'code',
  symbol: 'code',
  currency: 'code',
  currency_code: 'code',
  currencycode: 'code',
  price: 'price',
  value: 'price',
  open: 'open',
  high: 'high',
  low: 'low',
  close: 'close',
  volume: 'volume',
  vol: 'volume',
};

interface Columns {
  time: number;
  code: number;
  price: number;
  open: number;
  high: number;
  low: number;
  close: number;
  volume: number;
}

function columnsFromHeader(fields: string[], fixedCode: string | undefined): Columns {
  const columns: Columns = {
    time: -1,
    code: -1,
    price: -1,
    open: -1,
    high: -1,
    low: -1,
    close: -1,
    volume: -1,
  };
  fields.forEach((raw, index) => {
    const name = HEADER_ALIASES[raw.trim().toLowerCase().replace(/[\s-]/g, '_')];
    if (name && columns[name as keyof Columns] === -1) columns[name as keyof Columns] = index;
  });
  const found = fields.map((f) => f.trim()).join(', ');
  if (columns.time === -1) {
    throw new FileFormatError(`the header names no time column (found: ${clip(found, 120)})`);
  }
  if (columns.code === -1 && !fixedCode) {
    throw new FileFormatError(
      `the header names no code column and no --code was given (found: ${clip(found, 120)})`,
    );
  }
  const ohlc =
    columns.open !== -1 && columns.high !== -1 && columns.low !== -1 && columns.close !== -1;
  if (!ohlc && columns.price === -1) {
    throw new FileFormatError(
      `the header needs either price or open, high, low and close columns (found: ${clip(found, 120)})`,
    );
  }
  if (ohlc) columns.price = -1;
  return columns;
}

/**
 * Generic CSV with a header naming its columns: time and code, then price (a tick) or open, high,
 * low and close (a candle), and optionally volume. Time is ISO 8601 or epoch s/ms/µs/ns.
 */
export function genericCsvParser(
  file: string,
  codes: CodeResolver,
  fixedCode?: string,
): LineParser {
  const time = new TimeParser();
  let columns: Columns | null = null;
  let width = 0;
  return (batch) => {
    const out = collector(file, batch.bytes);
    for (let i = 0; i < batch.lines.length; i++) {
      const line = batch.lines[i] as string | null;
      const lineNo = batch.firstLine + i;
      if (line === '') continue;
      if (line === null) {
        if (!columns) throw new FileFormatError('the first line is not a CSV header');
        out.reject(lineNo, TOO_LONG);
        continue;
      }
      const f = splitCsvLine(line);
      if (!columns) {
        if (!f) throw new FileFormatError('the header line is not valid CSV');
        columns = columnsFromHeader(f, fixedCode);
        width = f.length;
        continue;
      }
      if (!f || f.length !== width) {
        out.reject(
          lineNo,
          f ? `expected ${width} columns, found ${f.length}` : 'malformed quoting',
        );
        continue;
      }
      const c = columns;
      const resolved =
        c.code === -1 ? codes.resolve(fixedCode ?? '') : codes.resolve(f[c.code] ?? '');
      if (resolved.reason !== undefined) {
        out.reject(lineNo, resolved.reason);
        continue;
      }
      const timeUs = time.parse(f[c.time] ?? '');
      if (typeof timeUs === 'string') {
        out.reject(lineNo, timeUs);
        continue;
      }
      const volume = c.volume === -1 ? 0 : toNumber(f[c.volume], 0);
      let candle: Candle | string;
      if (c.price !== -1) {
        const price = toNumber(f[c.price]);
        candle = Number.isNaN(price)
          ? 'price is not a number'
          : candleFrom(resolved.code, timeUs, [price, price, price, price, volume], lineNo);
      } else {
        candle = candleFrom(
          resolved.code,
          timeUs,
          [
            toNumber(f[c.open]),
            toNumber(f[c.high]),
            toNumber(f[c.low]),
            toNumber(f[c.close]),
            volume,
          ],
          lineNo,
        );
      }
      if (typeof candle === 'string') out.reject(lineNo, candle);
      else out.candles.push(candle);
    }
    return out;
  };
}

/** One JSON object per line: {code, time, open, high, low, close, volume?} or {code, time, price}. */
export function ndjsonParser(file: string, codes: CodeResolver, fixedCode?: string): LineParser {
  const time = new TimeParser();
  return (batch) => {
    const out = collector(file, batch.bytes);
    for (let i = 0; i < batch.lines.length; i++) {
      const line = batch.lines[i] as string | null;
      const lineNo = batch.firstLine + i;
      if (line === null) {
        out.reject(lineNo, TOO_LONG);
        continue;
      }
      if (line.trim() === '') continue;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        out.reject(lineNo, 'not valid JSON');
        continue;
      }
      const candle = candleFromObject(value, lineNo, codes, time, fixedCode);
      if (typeof candle === 'string') out.reject(lineNo, candle);
      else out.candles.push(candle);
    }
    return out;
  };
}

type Field = string | number | undefined | null;

function pick(o: Record<string, unknown>, ...names: string[]): Field {
  for (const name of names) {
    const v = o[name];
    if (v !== undefined && v !== null)
      return typeof v === 'number' || typeof v === 'string' ? v : Number.NaN;
  }
  return undefined;
}

/**
 * A candle or tick from a JSON object (NDJSON lines and the bulk HTTP route). Numbers may come as
 * numbers or numeric strings (exchanges send strings); time as ISO text or an epoch number.
 */
export function candleFromObject(
  value: unknown,
  line: number,
  codes: CodeResolver,
  time: TimeParser,
  fixedCode?: string,
): Candle | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return 'expected a JSON object';
  }
  const o = value as Record<string, unknown>;
  const rawCode = pick(o, 'code', 'currencyCode', 'symbol') ?? fixedCode;
  if (typeof rawCode !== 'string') return 'code is missing';
  const resolved = codes.resolve(rawCode);
  if (resolved.reason !== undefined) return resolved.reason;
  const rawTime = pick(o, 'time', 'timestamp');
  if (rawTime === undefined) return 'time is missing';
  const timeUs =
    typeof rawTime === 'number' ? time.parseEpoch(rawTime) : time.parse(String(rawTime));
  if (typeof timeUs === 'string') return timeUs;
  const rawVolume = pick(o, 'volume');
  const volume = rawVolume === undefined ? 0 : toNumber(rawVolume);
  const price = pick(o, 'price', 'value');
  if (pick(o, 'open') === undefined && price !== undefined) {
    const p = toNumber(price);
    if (Number.isNaN(p)) return 'price is not a number';
    return candleFrom(resolved.code, timeUs, [p, p, p, p, volume], line);
  }
  for (const name of ['open', 'high', 'low', 'close']) {
    if (pick(o, name) === undefined) return `${name} is missing (or give a price)`;
  }
  return candleFrom(
    resolved.code,
    timeUs,
    [
      toNumber(pick(o, 'open')),
      toNumber(pick(o, 'high')),
      toNumber(pick(o, 'low')),
      toNumber(pick(o, 'close')),
      volume,
    ],
    line,
  );
}
