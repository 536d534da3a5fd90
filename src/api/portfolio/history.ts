import { bucketStartMs } from '../../shared/time/bucketGrid.ts';
import type { PricePoint } from '../dataClient.ts';
import type { HoldingChange } from './holdings.ts';

// Portfolio history: the holdings timeline joined with price history at one resolution. Buckets
// are aligned to the Unix epoch like the data module's; each point values the holdings as they
// stood at the end of its bucket (so a trade shows in the bucket it happened in) at the bucket's
// price: the data module's first price of the bucket, or, for a bucket without one, the latest
// price known before it: the latest earlier bucket's price, or the price recorded with a trade
// when the trade came in a later bucket than that (within one bucket, market history wins).

export interface PortfolioHistoryPoint {
  timestamp: string;
  dollarBalance: number;
  shareBalance: number;
  totalWorth: number;
  valueChange: number;
  tradeOccurred: boolean;
}

export interface HistoryInput {
  /** Every change before `to`, oldest first. */
  changes: readonly HoldingChange[];
  /** Price history per currency code: epoch-aligned bucket starts, ascending. */
  prices: ReadonlyMap<string, readonly PricePoint[]>;
  from: number;
  to: number;
  intervalMs: number;
}

interface PriceEvent {
  time: number;
  value: number;
  /** A bucket's own first price, as opposed to a price recorded with a trade. */
  bucketPrice: boolean;
}

/** Currencies whose price history the answer needs: those ever held with shares. */
export function currenciesToPrice(changes: readonly HoldingChange[]): string[] {
  return [...new Set(changes.filter((c) => c.sharesAfter > 0).map((c) => c.currencyCode))];
}

/** Bucket starts the history spans: from the window's (or the portfolio's) first to now's. */
export function historyBuckets(firstChange: number, from: number, to: number, intervalMs: number) {
  const first = Math.max(floorTo(from, intervalMs), floorTo(firstChange, intervalMs));
  const last = floorTo(to, intervalMs);
  return { first, last, count: last < first ? 0 : (last - first) / intervalMs + 1 };
}

/** Start of the epoch-aligned bucket holding `time` (the data module's grid). */
function floorTo(time: number, intervalMs: number): number {
  return bucketStartMs({ intervalSeconds: intervalMs / 1000 }, time);
}

function priceEvents(input: HistoryInput): Map<string, PriceEvent[]> {
  const events = new Map<string, PriceEvent[]>();
  const add = (code: string, event: PriceEvent) => {
    const list = events.get(code) ?? [];
    list.push(event);
    events.set(code, list);
  };
  for (const [code, points] of input.prices) {
    for (const p of points) add(code, { time: p.time, value: p.value, bucketPrice: true });
  }
  for (const c of input.changes) {
    add(c.currencyCode, { time: c.changedAt.getTime(), value: c.price, bucketPrice: false });
  }
  // By bucket; within a bucket trades first, so the bucket's own price is what carries forward.
  const bucket = (event: PriceEvent) => floorTo(event.time, input.intervalMs);
  for (const list of events.values()) {
    list.sort(
      (a, b) =>
        bucket(a) - bucket(b) || Number(a.bucketPrice) - Number(b.bucketPrice) || a.time - b.time,
    );
  }
  return events;
}

export function portfolioHistory(input: HistoryInput): PortfolioHistoryPoint[] {
  const firstChange = input.changes[0];
  if (!firstChange) return [];
  const width = input.intervalMs;
  const { first, count } = historyBuckets(
    firstChange.changedAt.getTime(),
    input.from,
    input.to,
    width,
  );
  const events = priceEvents(input);
  const cursor = new Map<string, number>();
  const knownPrice = new Map<string, number>();
  const positions = new Map<string, { shares: number; dollars: number }>();
  let nextChange = 0;
  let previousWorth: number | undefined;
  const points: PortfolioHistoryPoint[] = [];

  for (let i = 0; i < count; i++) {
    const start = first + i * width;
    const end = start + width;
    let tradeOccurred = false;
    for (; nextChange < input.changes.length; nextChange++) {
      const change = input.changes[nextChange]!;
      if (change.changedAt.getTime() >= end) break;
      positions.set(change.currencyCode, {
        shares: change.sharesAfter,
        dollars: change.dollarsAfter,
      });
      if (change.changedAt.getTime() >= start) tradeOccurred = true;
    }
    let shareBalance = 0;
    let dollarBalance = 0;
    for (const [code, position] of positions) {
      dollarBalance += position.dollars;
      if (position.shares === 0) continue;
      const list = events.get(code) ?? [];
      let ownPrice: number | undefined;
      let at = cursor.get(code) ?? 0;
      for (; at < list.length && list[at]!.time < end; at++) {
        const event = list[at]!;
        knownPrice.set(code, event.value);
        if (event.bucketPrice && event.time >= start) ownPrice ??= event.value;
      }
      cursor.set(code, at);
      shareBalance += position.shares * (ownPrice ?? knownPrice.get(code) ?? 0);
    }
    const totalWorth = dollarBalance + shareBalance;
    points.push({
      timestamp: new Date(start).toISOString(),
      dollarBalance,
      shareBalance,
      totalWorth,
      valueChange: previousWorth === undefined ? 0 : totalWorth - previousWorth,
      tradeOccurred,
    });
    previousWorth = totalWorth;
  }
  return points;
}
