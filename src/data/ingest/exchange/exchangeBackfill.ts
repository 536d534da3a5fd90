import { toNumber } from '../candleValidation.ts';
import { CodeResolver } from '../codes.ts';
import { knownCurrencyCodes, type Connect } from '../connection.ts';
import { emptyResult, failedResult, loadUnit, type LoadOptions } from '../loader.ts';
import { TimeParser } from '../timeParsing.ts';
import { isUnitComplete } from '../unitStore.ts';
import type { Candle, Rejection, UnitResult } from '../types.ts';
import {
  HISTORY_SOURCES,
  type CandleSource,
  type HistorySourceName,
  type RawKline,
} from './candleSource.ts';
import { INTERVALS, intervalMs } from './intervals.ts';

// Backfill from an exchange's REST API, cut into time slices. Each slice is fetched whole (a day
// of one-minute candles is 1440 rows, two requests), then loaded as one unit with its completion
// record, so an interrupted backfill resumes at the first slice not recorded, and --enqueue can
// spread slices over several workers.

export const EXCHANGE_SOURCES = HISTORY_SOURCES;
export type ExchangeSource = HistorySourceName;
export { INTERVALS, intervalMs };

/** Candles per slice: a day of one-minute candles. */
const CANDLES_PER_SLICE = 1440;

export interface ExchangeSlice {
  source: ExchangeSource;
  code: string;
  symbol: string;
  interval: string;
  fromMs: number;
  toMs: number;
}

/** Cuts [from, to) into slices aligned to the epoch, each CANDLES_PER_SLICE candles long. */
export function planSlices(spec: {
  code: string;
  symbol: string;
  interval: string;
  from: Date;
  to: Date;
  source?: ExchangeSource;
}): ExchangeSlice[] {
  const step = intervalMs(spec.interval);
  const sliceMs = step * CANDLES_PER_SLICE;
  const start = Math.floor(spec.from.getTime() / step) * step;
  const end = Math.ceil(spec.to.getTime() / step) * step;
  const slices: ExchangeSlice[] = [];
  for (let t = start; t < end;) {
    const next = Math.min(end, (Math.floor(t / sliceMs) + 1) * sliceMs);
    slices.push({
      source: spec.source ?? 'binance',
      code: spec.code,
      symbol: spec.symbol,
      interval: spec.interval,
      fromMs: t,
      toMs: next,
    });
    t = next;
  }
  return slices;
}

export function sliceKey(s: ExchangeSlice): string {
  return `exchange:${s.source}:${s.symbol}:${s.interval}:${new Date(s.fromMs).toISOString()}:${new Date(s.toMs).toISOString()}`;
}

export function sliceLabel(s: ExchangeSlice): string {
  return `${s.source} ${s.symbol} ${s.interval} ${new Date(s.fromMs).toISOString()}..${new Date(s.toMs).toISOString()}`;
}

export function expectedCandles(s: ExchangeSlice): number {
  return Math.round((s.toMs - s.fromMs) / intervalMs(s.interval));
}

/**
 * Fetches one slice and loads it as one unit. A slice that reaches past the last closed candle is
 * loaded but not recorded as complete, so a later run fetches the rest of it.
 */
export async function importExchangeSlice(
  connect: Connect,
  client: CandleSource,
  slice: ExchangeSlice,
  options: LoadOptions = {},
): Promise<UnitResult> {
  const label = sliceLabel(slice);
  const key = sliceKey(slice);
  const connection = await connect();
  let broken: Error | undefined;
  try {
    if (!options.force && (await isUnitComplete(connection.client, key))) {
      options.onProgress?.(expectedCandles(slice), 0);
      return emptyResult(label, 'skipped');
    }
    const codes = new CodeResolver(await knownCurrencyCodes(connection.client));
    const resolved = codes.resolve(slice.code);
    if (resolved.reason !== undefined) return failedResult(label, resolved.reason);

    // Fetched before the transaction opens: waiting on the exchange must not hold it.
    const { candles, rejections } = await fetchSlice(client, slice, resolved.code, label);
    const now = options.now ?? Date.now();
    const complete = slice.toMs <= now - intervalMs(slice.interval);
    const result = await loadUnit(
      connection.client,
      {
        key: complete ? key : null,
        kind: 'exchange',
        label,
        source: slice.source,
        rows: async function* () {
          yield { file: label, candles, rejections, bytes: 0 };
        },
        expected: [{ code: resolved.code, from: new Date(slice.fromMs), to: new Date(slice.toMs) }],
      },
      { ...options, onProgress: undefined },
    );
    options.onProgress?.(expectedCandles(slice), 0);
    return result;
  } catch (error) {
    broken = error as Error;
    throw error;
  } finally {
    await connection.release(broken);
  }
}

async function fetchSlice(
  client: CandleSource,
  slice: ExchangeSlice,
  code: string,
  label: string,
): Promise<{ candles: Candle[]; rejections: Rejection[] }> {
  const candles: Candle[] = [];
  const rejections: Rejection[] = [];
  const time = new TimeParser('ms');
  let index = 0;
  const pages = client.candles(slice.symbol, slice.interval, slice.fromMs, slice.toMs);
  for await (const page of pages) {
    for (const kline of page) {
      index++;
      const candle = klineToCandle(kline, code, time, index);
      if (typeof candle === 'string') rejections.push({ file: label, line: index, reason: candle });
      else candles.push(candle);
    }
  }
  return { candles, rejections };
}

function klineToCandle(
  k: RawKline,
  code: string,
  time: TimeParser,
  index: number,
): Candle | string {
  if (k.length < 6) return `expected 6 candle fields, found ${k.length}`;
  const timeUs = typeof k[0] === 'number' ? time.parseEpoch(k[0]) : 'open time is not a number';
  if (typeof timeUs === 'string') return timeUs;
  const [open, high, low, close, volume] = [1, 2, 3, 4, 5].map((i) =>
    toNumber(typeof k[i] === 'string' || typeof k[i] === 'number' ? k[i] : undefined),
  ) as [number, number, number, number, number];
  if ([open, high, low, close, volume].some(Number.isNaN))
    return 'a price or the volume is not a number';
  return { code, timeUs, open, high, low, close, volume, line: index };
}

/** Klines as candles of one currency (the gap healer's conversion; rejected klines are skipped). */
export function klinesToCandles(
  klines: RawKline[],
  code: string,
): { candles: Candle[]; rejected: number } {
  const time = new TimeParser('ms');
  const candles: Candle[] = [];
  let rejected = 0;
  klines.forEach((kline, i) => {
    const candle = klineToCandle(kline, code, time, i + 1);
    if (typeof candle === 'string') rejected++;
    else candles.push(candle);
  });
  return { candles, rejected };
}
