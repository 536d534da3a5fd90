import { bucketStartMs } from '../../shared/time/bucketGrid.ts';
import type { PricePoint } from '../dataAnswers.ts';
import type { HoldingChange } from './holdings.ts';

// Portfolio history: the holdings timeline joined with price history at one resolution. Buckets
// are aligned to the Unix epoch like the data module's; each point values the holdings as they
// stood at the end of its bucket (so a trade shows in the bucket it happened in) at the bucket's
// price: the data module's first price of the bucket, or, for a bucket without one, the latest
// price known before it: the latest earlier bucket's price, or the price recorded with a trade
// when the trade came in a later bucket than that (within one bucket, market history wins).

export interface PortfolioHistoryPoint {
  /** Number of the bucket on the epoch grid (start / width). */
  id: number;
  timestamp: string;
  /** The same instant as timestamp, under the name older clients read. */
  lastUpdated: string;
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

interface AssetState {
  currencyCode: string;
  shares: number;
  dollars: number;
  /** Price of one share in this bucket (0 before any is known). */
  price: number;
  /** The holding changed within this bucket. */
  traded: boolean;
}

interface BucketState {
  start: number;
  /** Every holding that existed by the end of the bucket, in order of first change. */
  assets: AssetState[];
  tradeOccurred: boolean;
}

/**
 * Walks the buckets of the history, oldest first, with each holding's position at the end of
 * the bucket and its price for the bucket (see the top of this file).
 */
function walkBuckets(input: HistoryInput, visit: (bucket: BucketState) => void): void {
  const firstChange = input.changes[0];
  if (!firstChange) return;
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

  for (let i = 0; i < count; i++) {
    const start = first + i * width;
    const end = start + width;
    const traded = new Set<string>();
    for (; nextChange < input.changes.length; nextChange++) {
      const change = input.changes[nextChange]!;
      if (change.changedAt.getTime() >= end) break;
      positions.set(change.currencyCode, {
        shares: change.sharesAfter,
        dollars: change.dollarsAfter,
      });
      if (change.changedAt.getTime() >= start) traded.add(change.currencyCode);
    }
    const assets: AssetState[] = [];
    for (const [code, position] of positions) {
      const list = events.get(code) ?? [];
      let ownPrice: number | undefined;
      let at = cursor.get(code) ?? 0;
      for (; at < list.length && list[at]!.time < end; at++) {
        const event = list[at]!;
        knownPrice.set(code, event.value);
        if (event.bucketPrice && event.time >= start) ownPrice ??= event.value;
      }
      cursor.set(code, at);
      assets.push({
        currencyCode: code,
        shares: position.shares,
        dollars: position.dollars,
        price: ownPrice ?? knownPrice.get(code) ?? 0,
        traded: traded.has(code),
      });
    }
    visit({ start, assets, tradeOccurred: traded.size > 0 });
  }
}

export function portfolioHistory(input: HistoryInput): PortfolioHistoryPoint[] {
  const points: PortfolioHistoryPoint[] = [];
  let previousWorth: number | undefined;
  walkBuckets(input, ({ start, assets, tradeOccurred }) => {
    let shareBalance = 0;
    let dollarBalance = 0;
    for (const asset of assets) {
      dollarBalance += asset.dollars;
      if (asset.shares !== 0) shareBalance += asset.shares * asset.price;
    }
    const totalWorth = dollarBalance + shareBalance;
    const timestamp = new Date(start).toISOString();
    points.push({
      id: Math.floor(start / input.intervalMs),
      timestamp,
      lastUpdated: timestamp,
      dollarBalance,
      shareBalance,
      totalWorth,
      valueChange: previousWorth === undefined ? 0 : totalWorth - previousWorth,
      tradeOccurred,
    });
    previousWorth = totalWorth;
  });
  return points;
}

export interface AssetHistoryPoint {
  currencyCode: string;
  shares: number;
  sharesValueInDollars: number;
  assetWalletDollars: number;
  valueChange: number;
  sharesChange: number;
  tradeOccurred: boolean;
  lastUpdated: string;
}

/**
 * Each holding's history on the same grid and prices as the portfolio's: one point per asset
 * per bucket from the asset's first change, grouped by bucket (oldest first), then by asset.
 */
export function assetHistory(input: HistoryInput): AssetHistoryPoint[] {
  const points: AssetHistoryPoint[] = [];
  const previous = new Map<string, { worth: number; shares: number }>();
  walkBuckets(input, ({ start, assets }) => {
    const lastUpdated = new Date(start).toISOString();
    for (const asset of assets) {
      const sharesValueInDollars = asset.shares === 0 ? 0 : asset.shares * asset.price;
      const worth = sharesValueInDollars + asset.dollars;
      const before = previous.get(asset.currencyCode);
      points.push({
        currencyCode: asset.currencyCode,
        shares: asset.shares,
        sharesValueInDollars,
        assetWalletDollars: asset.dollars,
        valueChange: before === undefined ? 0 : worth - before.worth,
        sharesChange: before === undefined ? 0 : asset.shares - before.shares,
        tradeOccurred: asset.traded,
        lastUpdated,
      });
      previous.set(asset.currencyCode, { worth, shares: asset.shares });
    }
  });
  return points;
}
