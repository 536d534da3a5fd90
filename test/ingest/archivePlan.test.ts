import { describe, expect, test } from '@jest/globals';
import {
  fallbackParts,
  planArchiveParts,
  type ArchivePart,
} from '../../src/data/ingest/archive/archivePlan.ts';

// Which archives a range is fetched as: whole ended months as monthly zips, whole ended days as
// daily zips, the rest (today, partial days) from REST.

const DAY = 86_400_000;
const at = (iso: string) => Date.parse(iso);
const show = (parts: ArchivePart[]) =>
  parts.map((p) =>
    p.kind === 'rest'
      ? `rest ${new Date(p.fromMs).toISOString().slice(0, 16)}..${new Date(p.toMs).toISOString().slice(0, 16)}`
      : `${p.kind} ${p.period}`,
  );

describe('planArchiveParts', () => {
  test('ended months monthly, the current month by day, today from REST', () => {
    const now = at('2026-03-04T10:17:00Z');
    expect(show(planArchiveParts(at('2026-01-01'), now, now))).toEqual([
      'monthly 2026-01',
      'monthly 2026-02',
      'daily 2026-03-01',
      'daily 2026-03-02',
      'daily 2026-03-03',
      'rest 2026-03-04T00:00..2026-03-04T10:17',
    ]);
  });

  test('partial months at the edges come by day, partial days from REST', () => {
    const now = at('2026-06-01');
    expect(show(planArchiveParts(at('2026-01-30T12:00Z'), at('2026-03-02T06:00Z'), now))).toEqual([
      'rest 2026-01-30T12:00..2026-01-31T00:00',
      'daily 2026-01-31',
      'monthly 2026-02',
      'daily 2026-03-01',
      'rest 2026-03-02T00:00..2026-03-02T06:00',
    ]);
  });

  test('a range inside one day is one REST part; the parts tile the range exactly', () => {
    const now = at('2026-06-01');
    expect(show(planArchiveParts(at('2026-02-03T01:00Z'), at('2026-02-03T02:00Z'), now))).toEqual([
      'rest 2026-02-03T01:00..2026-02-03T02:00',
    ]);
    const from = at('2025-11-17T08:31Z');
    const to = at('2026-05-20T13:07Z');
    const parts = planArchiveParts(from, to, at('2026-05-20T13:07Z'));
    expect(parts[0]?.fromMs).toBe(from);
    expect(parts[parts.length - 1]?.toMs).toBe(to);
    parts.slice(1).forEach((p, i) => expect(p.fromMs).toBe(parts[i]?.toMs));
  });

  test('a missing month falls back to its days, a missing day to REST', () => {
    const [month] = planArchiveParts(at('2024-02-01'), at('2024-03-01'), at('2025-01-01'));
    if (!month || month.kind === 'rest') throw new Error('expected a monthly part');
    const days = fallbackParts(month);
    expect(days).toHaveLength(29); // 2024 is a leap year
    expect(show(days.slice(-1))).toEqual(['daily 2024-02-29']);
    const day = days[0];
    if (!day || day.kind === 'rest') throw new Error('expected a daily part');
    expect(fallbackParts(day)).toEqual([
      { kind: 'rest', fromMs: day.fromMs, toMs: day.fromMs + DAY },
    ]);
  });
});
