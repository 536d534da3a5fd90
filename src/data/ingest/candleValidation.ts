import { priceProblem, volumeProblem } from '../../shared/amounts.ts';
import type { Candle } from './types.ts';

/**
 * Clock skew allowed past now (PRICE_MAX_FUTURE_SECONDS's default). Small, because a stored row
 * wins over later observations: a "price" for a coming minute would replace the real one.
 */
export const DEFAULT_MAX_FUTURE_SECONDS = 60;

/** Latest candle time accepted; later times are wrong units, typos or forgeries. */
export function latestAcceptedMicros(
  now = Date.now(),
  maxFutureSeconds = DEFAULT_MAX_FUTURE_SECONDS,
): number {
  return (now + maxFutureSeconds * 1000) * 1000;
}

/**
 * Why a parsed candle cannot be stored, or null when it can. Stricter than the table's CHECK (it
 * also wants open and close inside [low, high]) because a candle breaking that is a column mix-up
 * in the input, and storing it would corrupt every rollup built on it.
 */
export function candleProblem(c: Candle, latestMicros: number): string | null {
  if (!Number.isFinite(c.timeUs) || c.timeUs < 0) return 'time is before 1970';
  if (c.timeUs > latestMicros) return 'time is in the future';
  const problem =
    priceProblem(c.open) ??
    priceProblem(c.high) ??
    priceProblem(c.low) ??
    priceProblem(c.close) ??
    volumeProblem(c.volume);
  if (problem) return problem;
  if (c.high < c.low) return 'high is below low';
  if (c.open > c.high || c.close > c.high) return 'open or close is above high';
  if (c.open < c.low || c.close < c.low) return 'open or close is below low';
  return null;
}

/**
 * Parses a numeric field strictly ('12abc' is not a number); blank text ('', spaces) gives
 * `blank`, NaN unless told. Number() itself skips the same surrounding white space as trim()
 * but reads blank text as 0, so only a 0 needs the look at whether the text was blank: no trim()
 * per field on the rest (a million-row file has millions of fields).
 */
export function toNumber(text: string | number | undefined | null, blank = Number.NaN): number {
  if (typeof text === 'number') return text;
  if (text === undefined || text === null) return Number.NaN;
  const value = Number(text);
  return value === 0 && text.trim() === '' ? blank : value;
}
