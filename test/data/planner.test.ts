import { describe, expect, test } from '@jest/globals';
import { LEVELS } from '../../src/data/history/levels.ts';
import { planSegments, usableLevels, validIntervals } from '../../src/data/history/planner.ts';
import { zoneOffsetSeconds, zoneOffsetsOver } from '../../src/shared/time/timeZones.ts';

const names = (levels: readonly { name: string }[]) => levels.map((l) => l.name);
const grid = (widthSeconds: number, originSeconds = 0, zoneOffsetsSeconds = [0]) => ({
  widthSeconds,
  originSeconds,
  zoneOffsetsSeconds,
});
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

describe('usableLevels', () => {
  test.each([
    [7, []],
    [60, []],
    [90, []],
    [120, []],
    [300, ['5m']],
    [600, ['5m']],
    [900, ['5m', '15m']],
    [1800, ['5m', '15m']],
    [3599, []],
    [3600, ['5m', '15m', '1h']],
    [7200, ['5m', '15m', '1h']],
    [14_400, ['5m', '15m', '1h']],
    [86_400, ['5m', '15m', '1h', '1d']],
    [604_800, ['5m', '15m', '1h', '1d']],
  ])('%i-second buckets read %j', (seconds, expected) => {
    expect(names(usableLevels(grid(seconds)))).toEqual(expected);
  });

  test('an origin or offset off the level grid rules the level out', () => {
    expect(names(usableLevels(grid(86_400, 3600)))).toEqual(['5m', '15m', '1h']);
    expect(names(usableLevels(grid(86_400, 600)))).toEqual(['5m']);
    expect(names(usableLevels(grid(86_400, 37)))).toEqual([]);
  });

  test('zone offsets decide: whole hours keep 1h, :30 and :45 zones read the offset hours', () => {
    expect(names(usableLevels(grid(86_400, 0, [3600, 7200])))).toEqual(['5m', '15m', '1h']);
    // Asia/Kolkata +05:30, Asia/Kathmandu +05:45, America/St_Johns −03:30 / −02:30 (DST):
    // their days start at :30, :15 and :30 past a UTC hour.
    expect(names(usableLevels(grid(86_400, 0, [19_800])))).toEqual(['5m', '15m', '1h_at30']);
    expect(names(usableLevels(grid(86_400, 0, [20_700])))).toEqual(['5m', '15m', '1h_at15']);
    expect(names(usableLevels(grid(86_400, 0, [-12_600, -9000])))).toEqual([
      '5m',
      '15m',
      '1h_at30',
    ]);
    expect(names(usableLevels(grid(1800, 0, [20_700])))).toEqual(['5m', '15m']);
    expect(names(usableLevels(grid(3600, 0, [19_800])))).toEqual(['5m', '15m', '1h_at30']);
    // A UTC grid whose origin is half past: the :30 hours serve it.
    expect(names(usableLevels(grid(7200, 1800)))).toEqual(['5m', '15m', '1h_at30']);
    // Australia/Lord_Howe: +10:30 and, in summer, +11:00; no hourly level fits both.
    expect(names(usableLevels(grid(86_400, 0, [37_800, 39_600])))).toEqual(['5m', '15m']);
    expect(names(usableLevels(grid(86_400, 0, [3208])))).toEqual([]); // Berlin's 1890 LMT
  });

  test('every offset a zone uses today is served by the 15-minute level', () => {
    const now = Date.UTC(2026, 0, 15);
    for (const zone of Intl.supportedValuesOf('timeZone')) {
      const offsets = zoneOffsetsOver(zone, now - 365 * DAY, now);
      expect({ zone, levels: names(usableLevels(grid(86_400, 0, offsets))) }).toEqual({
        zone,
        levels: expect.arrayContaining(['15m']),
      });
    }
  });

  test('days in every zone whose offsets differ by whole hours read an hourly level', () => {
    const now = Date.UTC(2026, 0, 15);
    const hourly = ['1h', '1h_at15', '1h_at30'];
    let zones = 0;
    for (const zone of Intl.supportedValuesOf('timeZone')) {
      const offsets = zoneOffsetsOver(zone, now - 365 * DAY, now);
      if (new Set(offsets.map((offset) => ((offset % 3600) + 3600) % 3600)).size > 1) continue;
      zones += 1;
      const levels = names(usableLevels(grid(86_400, 0, offsets)));
      expect({ zone, hourly: levels.filter((name) => hourly.includes(name)).length }).toEqual({
        zone,
        hourly: 1,
      });
    }
    expect(zones).toBeGreaterThan(300);
  });
});

describe('zone offsets', () => {
  test('DST in Berlin and New York, half and quarter hours elsewhere', () => {
    expect(zoneOffsetSeconds('Europe/Berlin', Date.UTC(2024, 0, 15))).toBe(3600);
    expect(zoneOffsetSeconds('Europe/Berlin', Date.UTC(2024, 6, 15))).toBe(7200);
    expect(zoneOffsetSeconds('America/New_York', Date.UTC(2024, 0, 15))).toBe(-5 * 3600);
    expect(zoneOffsetSeconds('Asia/Kolkata', Date.UTC(2024, 0, 15))).toBe(19_800);
    expect(zoneOffsetSeconds('Asia/Kathmandu', Date.UTC(2024, 0, 15))).toBe(20_700);
    expect(
      zoneOffsetsOver('Europe/Berlin', Date.UTC(2024, 2, 1), Date.UTC(2024, 3, 1)).sort(),
    ).toEqual([3600, 7200]);
  });
});

describe('planSegments', () => {
  const [m5, m15, h1, d1] = LEVELS;
  const all = [m5, m15, h1, d1];
  const complete = { '5m': Infinity, '15m': Infinity, '1h': Infinity, '1d': Infinity };

  test('the coarsest level serves the aligned middle, finer levels and raw rows the edges', () => {
    const from = 10 * DAY + 5 * HOUR + 7 * MIN + 3000;
    const to = 20 * DAY + 2 * HOUR + 32 * MIN + 10;
    const segments = planSegments({ start: from, end: to }, all, {
      watermarks: complete,
      stale: [],
    });
    expect(segments).toEqual([
      { source: 'raw', start: from, end: 10 * DAY + 5 * HOUR + 10 * MIN },
      { source: '5m', start: 10 * DAY + 5 * HOUR + 10 * MIN, end: 10 * DAY + 5 * HOUR + 15 * MIN },
      { source: '15m', start: 10 * DAY + 5 * HOUR + 15 * MIN, end: 10 * DAY + 6 * HOUR },
      { source: '1h', start: 10 * DAY + 6 * HOUR, end: 11 * DAY },
      { source: '1d', start: 11 * DAY, end: 20 * DAY },
      { source: '1h', start: 20 * DAY, end: 20 * DAY + 2 * HOUR },
      { source: '15m', start: 20 * DAY + 2 * HOUR, end: 20 * DAY + 2 * HOUR + 30 * MIN },
      { source: 'raw', start: 20 * DAY + 2 * HOUR + 30 * MIN, end: to },
    ]);
  });

  test('after each watermark the next finer level answers, then the raw rows', () => {
    const segments = planSegments({ start: 0, end: 10 * DAY }, all, {
      watermarks: {
        '5m': 9 * DAY + 5 * HOUR + 25 * MIN,
        '15m': 9 * DAY + 5 * HOUR + 15 * MIN,
        '1h': 9 * DAY + 5 * HOUR,
        '1d': 9 * DAY,
      },
      stale: [],
    });
    expect(segments).toEqual([
      { source: '1d', start: 0, end: 9 * DAY },
      { source: '1h', start: 9 * DAY, end: 9 * DAY + 5 * HOUR },
      { source: '15m', start: 9 * DAY + 5 * HOUR, end: 9 * DAY + 5 * HOUR + 15 * MIN },
      { source: '5m', start: 9 * DAY + 5 * HOUR + 15 * MIN, end: 9 * DAY + 5 * HOUR + 25 * MIN },
      { source: 'raw', start: 9 * DAY + 5 * HOUR + 25 * MIN, end: 10 * DAY },
    ]);
  });

  test('a stale range is read from below, as narrowly as each level allows', () => {
    const stale = { start: 3 * DAY + 4 * HOUR + 20 * MIN + 5, end: 3 * DAY + 4 * HOUR + 22 * MIN };
    const segments = planSegments({ start: 0, end: 5 * DAY }, all, {
      watermarks: complete,
      stale: [stale],
    });
    expect(segments).toEqual([
      { source: '1d', start: 0, end: 3 * DAY },
      { source: '1h', start: 3 * DAY, end: 3 * DAY + 4 * HOUR },
      { source: '15m', start: 3 * DAY + 4 * HOUR, end: 3 * DAY + 4 * HOUR + 15 * MIN },
      { source: '5m', start: 3 * DAY + 4 * HOUR + 15 * MIN, end: 3 * DAY + 4 * HOUR + 20 * MIN },
      // the range's end is inclusive, and read raw up to the next 5-minute boundary
      { source: 'raw', start: 3 * DAY + 4 * HOUR + 20 * MIN, end: 3 * DAY + 4 * HOUR + 25 * MIN },
      { source: '5m', start: 3 * DAY + 4 * HOUR + 25 * MIN, end: 3 * DAY + 4 * HOUR + 30 * MIN },
      { source: '15m', start: 3 * DAY + 4 * HOUR + 30 * MIN, end: 3 * DAY + 5 * HOUR },
      { source: '1h', start: 3 * DAY + 5 * HOUR, end: 4 * DAY },
      { source: '1d', start: 4 * DAY, end: 5 * DAY },
    ]);
  });

  test('days in Kolkata are read from the hours starting at :30, finer levels at the edges', () => {
    const kolkata = usableLevels(grid(86_400, 0, [19_800]));
    const from = 10 * DAY - 5 * HOUR - 30 * MIN; // local midnight, 18:30 UTC
    const window = { start: from, end: from + 30 * DAY };
    expect(planSegments(window, kolkata, { watermarks: complete, stale: [] })).toEqual([
      { source: '15m', start: from, end: from + 30 * DAY },
    ]);
    const watermarks = { ...complete, '1h_at30': from + 20 * DAY + 3 * HOUR };
    // A backfill inside one :30 hour: that hour is read from finer levels, its touched minutes
    // from the raw rows.
    const at = (minutes: number) => from + 5 * DAY + minutes * MIN;
    const stale = [{ start: at(7 * 60 + 10), end: at(7 * 60 + 20) }];
    expect(planSegments(window, kolkata, { watermarks, stale })).toEqual([
      { source: '1h_at30', start: from, end: at(7 * 60) },
      { source: '5m', start: at(7 * 60), end: at(7 * 60 + 10) },
      { source: 'raw', start: at(7 * 60 + 10), end: at(7 * 60 + 25) },
      { source: '5m', start: at(7 * 60 + 25), end: at(7 * 60 + 30) },
      { source: '15m', start: at(7 * 60 + 30), end: at(8 * 60) },
      { source: '1h_at30', start: at(8 * 60), end: from + 20 * DAY + 3 * HOUR },
      { source: '15m', start: from + 20 * DAY + 3 * HOUR, end: from + 30 * DAY },
    ]);
    // Kathmandu (+05:45): a window from 10:05 UTC reads 5 minutes, then hours from 10:15.
    const kathmandu = usableLevels(grid(3600, 0, [20_700]));
    const start = 10 * DAY + 10 * HOUR + 5 * MIN;
    expect(
      planSegments({ start, end: start + DAY }, kathmandu, {
        watermarks: { ...complete, '1h_at15': Infinity },
        stale: [],
      }),
    ).toEqual([
      { source: '5m', start, end: start + 10 * MIN },
      { source: '1h_at15', start: start + 10 * MIN, end: start + DAY - 50 * MIN },
      { source: '15m', start: start + DAY - 50 * MIN, end: start + DAY - 5 * MIN },
      { source: '5m', start: start + DAY - 5 * MIN, end: start + DAY },
    ]);
  });

  test('without watermarks everything is raw; segments always tile the window', () => {
    expect(planSegments({ start: 5, end: 9 * DAY }, all, { watermarks: {}, stale: [] })).toEqual([
      { source: 'raw', start: 5, end: 9 * DAY },
    ]);
    expect(validIntervals(h1, { watermarks: { '1h': 5 * HOUR }, stale: [] })).toEqual([
      { start: -Infinity, end: 5 * HOUR },
    ]);
  });
});
