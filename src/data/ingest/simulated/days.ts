import type { SimulatedMarket } from '../../../data/market/sources/simulated.ts';
import type { Candle } from '../types.ts';

// Simulated history: the simulated market's own price paths (a pure function of time, see
// src/data/market/sources/simulated.ts) sampled as one-minute candles. A candle's open is the
// path at the start of its minute and its close the path at the end, which is the next candle's
// open; high and low also take the path at two points inside the minute. The last candle closes
// at the price the harvester reads at that instant, so history runs into the live prices without
// a jump.

export const SIMULATED_SOURCE = 'simulated';
const MINUTE_MS = 60_000;
export const DAY_MS = 86_400_000;
/** Seconds inside a minute where the path is sampled for high and low (multiples of 4 share most halvings). */
const INNER_SAMPLES = [20, 40];
const SAMPLES_PER_MINUTE = 1 + INNER_SAMPLES.length;

/** One load unit: one day (or less) of one-minute candles of every currency, [fromMs, toMs). */
export interface SimulatedDay {
  seed: string;
  fromMs: number;
  toMs: number;
}

/** `days` days ending at `untilMs` (floored to the minute), the most recent day first. */
export function planSimulatedDays(seed: string, untilMs: number, days: number): SimulatedDay[] {
  const until = Math.floor(untilMs / MINUTE_MS) * MINUTE_MS;
  return Array.from({ length: days }, (_, i) => ({
    seed,
    fromMs: until - (i + 1) * DAY_MS,
    toMs: until - i * DAY_MS,
  }));
}

/** The unit's completion record key: the seed decides every price, the range every row. */
export function simulatedDayKey(day: SimulatedDay): string {
  return `simulated:${day.seed}:${iso(day.fromMs)}:${iso(day.toMs)}`;
}

export function simulatedDayLabel(day: SimulatedDay): string {
  return `simulated ${iso(day.fromMs)}..${iso(day.toMs)}`;
}

/** Prices of one day for a list of currencies, minute by minute, in flat arrays (code-major). */
export interface DayPrices {
  day: SimulatedDay;
  codes: string[];
  minutes: number;
  open: Float64Array;
  high: Float64Array;
  low: Float64Array;
  close: Float64Array;
}

/**
 * Samples the day for every code. Gives the event loop a turn after each currency (about a
 * millisecond of work), so the harvester and the HTTP roles of the same process stay prompt.
 */
export async function sampleDay(
  market: SimulatedMarket,
  codes: string[],
  day: SimulatedDay,
): Promise<DayPrices> {
  const minutes = Math.round((day.toMs - day.fromMs) / MINUTE_MS);
  const seconds = sampleSeconds(day.fromMs / 1000, minutes);
  const size = codes.length * minutes;
  const out: DayPrices = {
    day,
    codes,
    minutes,
    open: new Float64Array(size),
    high: new Float64Array(size),
    low: new Float64Array(size),
    close: new Float64Array(size),
  };
  for (const [c, code] of codes.entries()) {
    const path = market.pricesAt(code, seconds);
    const base = c * minutes;
    for (let m = 0; m < minutes; m++) {
      const first = m * SAMPLES_PER_MINUTE;
      const open = path[first]!;
      const close = path[first + SAMPLES_PER_MINUTE]!;
      let high = open > close ? open : close;
      let low = open < close ? open : close;
      for (let s = 1; s < SAMPLES_PER_MINUTE; s++) {
        const p = path[first + s]!;
        if (p > high) high = p;
        if (p < low) low = p;
      }
      out.open[base + m] = open;
      out.high[base + m] = high;
      out.low[base + m] = low;
      out.close[base + m] = close;
    }
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return out;
}

/** Every minute's start and inner samples, then the end of the last minute. */
function sampleSeconds(fromSecond: number, minutes: number): Float64Array {
  const seconds = new Float64Array(minutes * SAMPLES_PER_MINUTE + 1);
  for (let m = 0; m < minutes; m++) {
    const start = fromSecond + m * 60;
    seconds[m * SAMPLES_PER_MINUTE] = start;
    for (const [s, offset] of INNER_SAMPLES.entries()) {
      seconds[m * SAMPLES_PER_MINUTE + 1 + s] = start + offset;
    }
  }
  seconds[minutes * SAMPLES_PER_MINUTE] = fromSecond + minutes * 60;
  return seconds;
}

/** The candles of one currency of the day (the loader's batch; volume 0: nobody traded). */
export function candlesOf(prices: DayPrices, c: number): Candle[] {
  const code = prices.codes[c]!;
  const base = c * prices.minutes;
  const candles = new Array<Candle>(prices.minutes);
  for (let m = 0; m < prices.minutes; m++) {
    const i = base + m;
    candles[m] = {
      code,
      timeUs: (prices.day.fromMs + m * MINUTE_MS) * 1000,
      open: prices.open[i]!,
      high: prices.high[i]!,
      low: prices.low[i]!,
      close: prices.close[i]!,
      volume: 0,
      line: i + 1,
    };
  }
  return candles;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
