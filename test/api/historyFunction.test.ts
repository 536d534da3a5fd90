import { describe, expect, test } from '@jest/globals';
import { portfolioHistory } from '../../src/api/portfolio/history.ts';
import type { HoldingChange } from '../../src/api/portfolio/holdings.ts';

// The join itself, on small hand-made timelines: 10-second buckets from t = 1000 s.

const S = 1000;
const T0 = 1_000_000_000_000; // an instant on a 10-second boundary
const at = (seconds: number) => T0 + seconds * S;

function change(
  code: string,
  seconds: number,
  price: number,
  sharesAfter: number,
  dollarsAfter = 0,
): HoldingChange {
  return { currencyCode: code, changedAt: new Date(at(seconds)), price, sharesAfter, dollarsAfter };
}

function run(
  changes: HoldingChange[],
  prices: Record<string, Array<[number, number]>>,
  toSeconds: number,
) {
  return portfolioHistory({
    changes,
    prices: new Map(
      Object.entries(prices).map(([code, points]) => [
        code,
        points.map(([s, value]) => ({ time: at(s), value })),
      ]),
    ),
    from: at(-100),
    to: at(toSeconds),
    intervalMs: 10 * S,
  }).map((p) => [p.totalWorth, p.valueChange, p.tradeOccurred]);
}

describe('portfolioHistory', () => {
  test('no changes, no points', () => {
    expect(run([], {}, 50)).toEqual([]);
  });

  test('a bucket without prices carries the previous one; the bucket of "to" is included', () => {
    expect(
      run(
        [change('BTC', 5, 10, 1)],
        {
          BTC: [
            [0, 9],
            [20, 12],
          ],
        },
        45,
      ),
    ).toEqual([
      [9, 0, true], // bucket 0: its own first price
      [9, 0, false], // bucket 10: none, carries 9 (market history wins over the trade within a bucket)
      [12, 3, false],
      [12, 0, false],
      [12, 0, false], // bucket 40 holds "to"
    ]);
  });

  test('with no market price yet, the trade price stands in', () => {
    expect(run([change('BTC', 3, 50, 2)], {}, 25)).toEqual([
      [100, 0, true],
      [100, 0, false],
      [100, 0, false],
    ]);
  });

  test('a trade in a later bucket than the last market price is the latest knowledge', () => {
    expect(
      run([change('BTC', 1, 10, 1), change('BTC', 25, 20, 2)], { BTC: [[0, 10]] }, 35),
    ).toEqual([
      [10, 0, true],
      [10, 0, false],
      [40, 30, true], // 2 shares at the trade's 20
      [40, 0, false],
    ]);
  });

  test('selling everything leaves only the dollars; dollars alone need no price', () => {
    expect(
      run(
        [change('ETH', 0, 4, 5, 100), change('ETH', 12, 6, 0, 130)],
        {
          ETH: [
            [0, 4],
            [10, 6],
          ],
        },
        25,
      ),
    ).toEqual([
      [120, 0, true],
      [130, 10, true],
      [130, 0, false],
    ]);
  });

  test('several currencies add up, each with its own carry', () => {
    expect(
      run(
        [change('BTC', 0, 100, 1), change('ETH', 11, 10, 3)],
        {
          BTC: [
            [0, 100],
            [20, 110],
          ],
          ETH: [[10, 9]],
        },
        29,
      ),
    ).toEqual([
      [100, 0, true],
      [127, 27, true], // BTC carries 100, ETH 3 × 9
      [137, 10, false], // BTC 110, ETH carries 9
    ]);
  });
});
