import type { PricePoint } from '../dataAnswers.ts';
import type { DataClient } from '../dataClient.ts';
import { MAX_HOURS } from '../../shared/http/queryParams.ts';
import { longestHoursWithin } from '../../shared/time/bucketGrid.ts';
import { currenciesToPrice, historyBuckets } from './history.ts';
import type { HoldingChange } from './holdings.ts';

export interface HistoryWindow {
  hours: number;
  intervalSeconds: number;
  from: number;
  to: number;
  /** The data module's point cap (HISTORY_MAX_POINTS). */
  maxPoints: number;
}

/**
 * Hours of price history that reach back before a window: as much again plus a day, within the
 * data module's limits.
 */
export function lookbackHours(hours: number, intervalSeconds: number, maxPoints: number): number {
  const withinCap = longestHoursWithin(maxPoints, intervalSeconds);
  return Math.max(hours, Math.min(MAX_HOURS, 2 * hours + 24, withinCap));
}

/** Currencies with shares held at `instant` (changes before it decide). */
function heldAt(changes: readonly HoldingChange[], instant: number): Set<string> {
  const shares = new Map<string, number>();
  for (const c of changes) {
    if (c.changedAt.getTime() >= instant) break;
    shares.set(c.currencyCode, c.sharesAfter);
  }
  return new Set([...shares].filter(([, held]) => held > 0).map(([code]) => code));
}

/**
 * The price history of every currency the history needs, at the window's resolution. A
 * currency already held when the window opens, whose prices do not reach back to its first
 * bucket (the window opens in a gap), is asked again with a longer look-back, so it starts from
 * the last market price before the window rather than from its old trade price.
 */
export async function priceHistories(
  data: DataClient,
  changes: readonly HoldingChange[],
  window: HistoryWindow,
): Promise<Map<string, PricePoint[]>> {
  const firstChange = changes[0];
  if (!firstChange) return new Map();
  const { first } = historyBuckets(
    firstChange.changedAt.getTime(),
    window.from,
    window.to,
    window.intervalSeconds * 1000,
  );
  const heldAtStart = heldAt(changes, first);
  const longer = lookbackHours(window.hours, window.intervalSeconds, window.maxPoints);
  const entries = await Promise.all(
    currenciesToPrice(changes).map(async (code): Promise<[string, PricePoint[]]> => {
      const points = await data.history(code, window.hours, window.intervalSeconds);
      const reachesStart = points[0] !== undefined && points[0].time <= first;
      if (heldAtStart.has(code) && !reachesStart && longer > window.hours) {
        return [code, await data.history(code, longer, window.intervalSeconds)];
      }
      return [code, points];
    }),
  );
  return new Map(entries);
}
