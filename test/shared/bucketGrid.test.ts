import { describe, expect, test } from '@jest/globals';
import { lookbackHours } from '../../src/api/portfolio/priceHistories.ts';
import {
  assertWithinPointCap,
  bucketStartMs,
  fixedEquivalent,
  followsWallClock,
  isBoundary,
  localGrid,
  longestHoursWithin,
  maxBuckets,
  maxBucketsOverHours,
  stampsOnWholeSeconds,
  utcOriginMs,
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

  test("only a zone's days and weeks follow its wall clock", () => {
    expect(followsWallClock({ intervalSeconds: 86_400 })).toBe(false);
    expect(followsWallClock({ intervalSeconds: 3600, timeZone: 'Europe/Berlin' })).toBe(false);
    expect(followsWallClock({ intervalSeconds: 86_400, timeZone: 'Europe/Berlin' })).toBe(true);
    expect(followsWallClock({ intervalSeconds: 7 * 86_400, timeZone: 'Asia/Kolkata' })).toBe(true);
  });

  test("a zone's days and weeks are a fixed grid where the zone keeps one offset over the window", () => {
    const year = { from: at('2025-11-28T10:00:00Z'), to: at('2026-11-28T10:00:00Z') };
    // Kolkata (+05:30 all year): days from 18:30 UTC, the local midnight before.
    const kolkata = fixedEquivalent({ intervalSeconds: 86_400, timeZone: 'Asia/Kolkata' }, year)!;
    expect(kolkata).toEqual({ intervalSeconds: 86_400, origin: at('2000-01-02T18:30:00Z') });
    expect(bucketStartMs(kolkata, Date.parse('2026-03-01T20:00:00Z'))).toBe(
      Date.parse('2026-03-01T18:30:00Z'),
    );
    // Kathmandu's weeks start on Monday at local midnight (Sunday 18:15 UTC).
    const weeks = fixedEquivalent({ intervalSeconds: 604_800, timeZone: 'Asia/Kathmandu' }, year)!;
    expect(bucketStartMs(weeks, Date.parse('2026-03-04T12:00:00Z'))).toBe(
      Date.parse('2026-03-01T18:15:00Z'),
    );
    // An origin and an offset move the boundaries as on the wall-clock grid.
    const shifted = fixedEquivalent(
      {
        intervalSeconds: 86_400,
        timeZone: 'Asia/Kolkata',
        origin: at('2024-01-01T00:30:00Z'),
        offsetSeconds: 3600,
      },
      year,
    )!;
    expect(bucketStartMs(shifted, Date.parse('2026-03-01T20:00:00Z'))).toBe(
      Date.parse('2026-03-01T01:30:00Z'),
    );
    // Berlin keeps +02:00 through a summer month: days from 22:00 UTC.
    const july = { from: at('2026-07-01T00:00:00Z'), to: at('2026-08-01T00:00:00Z') };
    const berlin = fixedEquivalent({ intervalSeconds: 86_400, timeZone: 'Europe/Berlin' }, july)!;
    expect(bucketStartMs(berlin, Date.parse('2026-07-10T12:00:00Z'))).toBe(
      Date.parse('2026-07-09T22:00:00Z'),
    );
  });

  test('a wall-clock grid stays one where the offset changes within reach of its buckets', () => {
    const days = { intervalSeconds: 86_400, timeZone: 'Europe/Berlin' };
    expect(
      fixedEquivalent(days, { from: at('2025-11-28T00:00:00Z'), to: at('2026-11-28T00:00:00Z') }),
    ).toBeUndefined();
    // The window starts after the spring change (2026-03-29 01:00 UTC), but its first bucket,
    // the 23-hour day of the change, starts before it.
    expect(
      fixedEquivalent(days, { from: at('2026-03-29T10:00:00Z'), to: at('2026-04-10T00:00:00Z') }),
    ).toBeUndefined();
    // Fixed grids have nothing to change to.
    const year = { from: at('2025-11-28T00:00:00Z'), to: at('2026-11-28T00:00:00Z') };
    expect(fixedEquivalent({ intervalSeconds: 86_400 }, year)).toBeUndefined();
    expect(
      fixedEquivalent({ intervalSeconds: 3600, timeZone: 'Asia/Kolkata' }, year),
    ).toBeUndefined();
  });

  test("a zone's buckets under a day are fixed in time from its local midnight of 2000-01-03", () => {
    const window = { from: at('2025-10-25T12:00:00Z'), to: at('2025-10-26T12:00:00Z') };
    const berlin = { intervalSeconds: 900, timeZone: 'Europe/Berlin' };
    expect(followsWallClock(berlin)).toBe(false);
    expect(utcOriginMs(berlin)).toBe(Date.parse('2000-01-02T23:00:00Z'));
    // Berlin falls back at 01:00 UTC on 2025-10-26: 02:00-03:00 local comes twice, as two distinct
    // hours of quarter-hour buckets, each stamped with its own instant.
    expect(bucketStartMs(berlin, Date.parse('2025-10-26T00:20:00Z'))).toBe(
      Date.parse('2025-10-26T00:15:00Z'),
    );
    expect(bucketStartMs(berlin, Date.parse('2025-10-26T01:20:00Z'))).toBe(
      Date.parse('2025-10-26T01:15:00Z'),
    );
    // So the planner reads them as a UTC grid: no zone offsets to nest in.
    expect(localGrid(berlin, window)).toEqual({
      widthSeconds: 900,
      originSeconds: Date.parse('2000-01-02T23:00:00Z') / 1000,
      zoneOffsetsSeconds: [0],
    });
    for (const [timeZone, anchor] of [
      ['America/New_York', '2000-01-03T05:00:00Z'],
      ['Asia/Kolkata', '2000-01-02T18:30:00Z'],
      ['Asia/Kathmandu', '2000-01-02T18:15:00Z'],
      ['America/St_Johns', '2000-01-03T03:30:00Z'],
      // Lord Howe's summer (+11:00) holds 2000-01-03; its winter is +10:30.
      ['Australia/Lord_Howe', '2000-01-02T13:00:00Z'],
    ] as const) {
      expect({
        timeZone,
        anchor: new Date(utcOriginMs({ intervalSeconds: 3600, timeZone })),
      }).toEqual({
        timeZone,
        anchor: at(anchor),
      });
    }
    // An origin given is the anchor itself, shifted by the offset.
    const origin = at('2024-01-01T00:07:00Z');
    expect(
      utcOriginMs({ intervalSeconds: 600, timeZone: 'Asia/Kolkata', origin, offsetSeconds: 60 }),
    ).toBe(origin.getTime() + 60_000);
  });

  test('a zone grid of days is counted on the wall clock from local midnight of 2000-01-03', () => {
    const window = { from: at('2024-01-01T00:00:00Z'), to: at('2024-01-02T00:00:00Z') };
    expect(localGrid({ intervalSeconds: 86_400, timeZone: 'Asia/Kolkata' }, window)).toEqual({
      widthSeconds: 86_400,
      originSeconds: Date.UTC(2000, 0, 3) / 1000,
      zoneOffsetsSeconds: [19_800],
    });
    expect(localGrid({ intervalSeconds: 60 }, window).zoneOffsetsSeconds).toEqual([0]);
  });
  test('stamps fall on whole seconds unless an origin has milliseconds', () => {
    expect(stampsOnWholeSeconds({ intervalSeconds: 60 })).toBe(true);
    expect(stampsOnWholeSeconds({ intervalSeconds: 7, offsetSeconds: -1800 })).toBe(true);
    expect(stampsOnWholeSeconds({ intervalSeconds: 900, timeZone: 'Asia/Kathmandu' })).toBe(true);
    expect(stampsOnWholeSeconds({ intervalSeconds: 60, origin: at('2024-01-01T00:00:01Z') })).toBe(
      true,
    );
    expect(
      stampsOnWholeSeconds({ intervalSeconds: 60, origin: at('2024-01-01T00:00:00.250Z') }),
    ).toBe(false);
    expect(
      stampsOnWholeSeconds({
        intervalSeconds: 86_400,
        timeZone: 'Europe/Berlin',
        origin: at('1969-12-31T23:59:59.999Z'),
      }),
    ).toBe(false);
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

  test("a zone's days count the longer wall-clock span of a change; its hours do not", () => {
    // Europe/Berlin springs forward on 2024-03-31: 24 UTC hours span 25 wall-clock hours.
    const window = { from: at('2024-03-30T12:00:00Z'), to: at('2024-03-31T12:00:00Z') };
    expect(maxBuckets({ intervalSeconds: 3600 }, window)).toBe(25);
    expect(maxBuckets({ intervalSeconds: 3600, timeZone: 'Europe/Berlin' }, window)).toBe(25);
    // Two days from noon to noon across the change: three UTC days, four local ones at most.
    const days = { from: at('2024-03-30T12:00:00Z'), to: at('2024-04-01T12:00:00Z') };
    expect(maxBuckets({ intervalSeconds: 86_400 }, days)).toBe(3);
    expect(maxBuckets({ intervalSeconds: 86_400, timeZone: 'Europe/Berlin' }, days)).toBe(4);
    // The API's candles count the same way over the hours before now.
    const now = Date.parse('2024-04-01T12:00:00Z');
    expect(maxBucketsOverHours(48, 86_400, 'Europe/Berlin', now)).toBe(4);
    expect(maxBucketsOverHours(48, 86_400, undefined, now)).toBe(3);
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
