import { describe, expect, test } from '@jest/globals';
import { lookbackHours } from '../../src/api/portfolio/priceHistories.ts';
import {
  assertWithinPointCap,
  bucketStartMs,
  isBoundary,
  localGrid,
  longestHoursWithin,
  maxBuckets,
  maxBucketsOverHours,
} from '../../src/shared/time/bucketGrid.ts';

const at = (iso: string) => new Date(iso);

describe('the bucket grid', () => {
  test('stamps a time with the start of its bucket, from the epoch or the given origin and offset', () => {
    const t = Date.UTC(2024, 0, 1, 10, 17, 30);
    expect(bucketStartMs({ intervalSeconds: 900 }, t)).toBe(Date.UTC(2024, 0, 1, 10, 15));
    expect(bucketStartMs({ intervalSeconds: 900, offsetSeconds: 60 }, t)).toBe(
      Date.UTC(2024, 0, 1, 10, 16),
    );
    const origin = at('2024-01-01T00:05:00Z');
    expect(bucketStartMs({ intervalSeconds: 3600, origin }, t)).toBe(Date.UTC(2024, 0, 1, 10, 5));
    // Before the epoch too: floor, not truncation.
    expect(bucketStartMs({ intervalSeconds: 60 }, -1)).toBe(-60_000);
    expect(isBoundary({ intervalSeconds: 60 }, Date.UTC(2024, 0, 1, 10, 17))).toBe(true);
    expect(isBoundary({ intervalSeconds: 60 }, t)).toBe(false);
  });

  test('a zone grid is counted on the wall clock from local midnight of 2000-01-03', () => {
    const window = { from: at('2024-01-01T00:00:00Z'), to: at('2024-01-02T00:00:00Z') };
    expect(localGrid({ intervalSeconds: 86_400, timeZone: 'Asia/Kolkata' }, window)).toEqual({
      widthSeconds: 86_400,
      originSeconds: Date.UTC(2000, 0, 3) / 1000,
      zoneOffsetsSeconds: [19_800],
    });
    expect(localGrid({ intervalSeconds: 60 }, window).zoneOffsetsSeconds).toEqual([0]);
  });
});

describe('the point cap', () => {
  test('counts the buckets a window can overlap, whatever its alignment', () => {
    const aligned = { from: at('2024-01-01T00:00:00Z'), to: at('2024-01-01T01:00:00Z') };
    // An hour at 15 minutes is four buckets when aligned, five when not: the cap counts five.
    expect(maxBuckets({ intervalSeconds: 900 }, aligned)).toBe(5);
    expect(maxBucketsOverHours(1, 900)).toBe(5);
    expect(maxBucketsOverHours(24, 3600)).toBe(25);
  });

  test('a zone changing its offset in the window counts the longer wall-clock span', () => {
    // Europe/Berlin springs forward on 2024-03-31: 24 UTC hours span 25 wall-clock hours.
    const window = { from: at('2024-03-30T12:00:00Z'), to: at('2024-03-31T12:00:00Z') };
    expect(maxBuckets({ intervalSeconds: 3600 }, window)).toBe(25);
    expect(maxBuckets({ intervalSeconds: 3600, timeZone: 'Europe/Berlin' }, window)).toBe(26);
  });

  test('the longest window within the cap is never refused, an hour more is', () => {
    for (const [cap, interval] of [
      [50_000, 60],
      [500, 3600],
      [1000, 900],
      [2, 86_400],
    ] as const) {
      const hours = longestHoursWithin(cap, interval);
      expect(maxBucketsOverHours(hours, interval)).toBeLessThanOrEqual(cap);
      expect(maxBucketsOverHours(hours + 1, interval)).toBeGreaterThan(cap);
    }
  });

  test("the API's portfolio look-back stays within the data module's cap", () => {
    // At 180 s the cap bounds the look-back: 50 hours would be 1,001 buckets.
    for (const interval of [180, 240, 300, 3600]) {
      const hours = lookbackHours(24, interval, 1000);
      expect(maxBucketsOverHours(hours, interval)).toBeLessThanOrEqual(1000);
    }
  });

  test('refuses with too_many_points naming the parameter, and lets the cap itself through', () => {
    expect(() =>
      assertWithinPointCap(100, 100, { parameter: 'interval', advice: 'use the export route' }),
    ).not.toThrow();
    expect(() =>
      assertWithinPointCap(101, 100, { parameter: 'interval', advice: 'use the export route' }),
    ).toThrow(
      expect.objectContaining({
        code: 'too_many_points',
        message: expect.stringContaining(
          'up to 101 points, more than the limit of 100; use the export route',
        ),
      }),
    );
  });
});
