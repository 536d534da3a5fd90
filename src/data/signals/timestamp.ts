import { z } from 'zod';
import { instantOfWallClock } from '../../shared/time/timeZones.ts';
import { currentNaiveTimeZone } from './naiveTimeZone.ts';

// The deployed clients send `yyyy-MM-dd HH:mm:ss` (UTC by convention) or ISO 8601. Both forms are
// read by one grammar: a date, optionally a time after `T` or a space, optionally fractional
// seconds and a zone. Without a zone the time is read in DATA_NAIVE_TIME_ZONE (UTC by default).
// Digits beyond milliseconds are dropped.
const TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;

function zoneOffsetMinutes(zone: string): number | null {
  if (zone.toUpperCase() === 'Z') return 0;
  const digits = zone.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = Number(digits.slice(2) || '0');
  if (hours > 23 || minutes > 59) return null;
  return (zone.startsWith('-') ? -1 : 1) * (hours * 60 + minutes);
}

/** The instant a timestamp string names, or null when it is not one of the accepted forms. */
export function parseTimestamp(text: string, naiveZone = currentNaiveTimeZone()): Date | null {
  const match = TIMESTAMP.exec(text);
  if (!match) return null;
  const [, y = '', mo = '', d = '', h = '0', mi = '0', s = '0', fraction = '', zone] = match;
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const offset = zone === undefined ? 0 : zoneOffsetMinutes(zone);
  if (offset === null || month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) {
    return null;
  }
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  if (date.getUTCDate() !== day || year < 1) return null; // 2026-02-30 would roll over: refused
  date.setUTCHours(hour, minute, second, Number(fraction.padEnd(3, '0').slice(0, 3)));
  if (zone === undefined) return new Date(instantOfWallClock(date.getTime(), naiveZone));
  return new Date(date.getTime() - offset * 60_000);
}

export const TIMESTAMP_FORMATS = "'yyyy-MM-dd HH:mm:ss' or ISO 8601";

/** A timestamp field in either accepted form, parsed to a Date. */
export const timestampSchema = z
  .string()
  .max(64)
  .transform((value, ctx) => {
    const date = parseTimestamp(value.trim());
    if (!date) {
      ctx.addIssue({ code: 'custom', message: `must be a timestamp ${TIMESTAMP_FORMATS}` });
      return z.NEVER;
    }
    return date;
  })
  .meta({
    description: `${TIMESTAMP_FORMATS}; without a zone the time is read in DATA_NAIVE_TIME_ZONE (UTC unless configured).`,
    examples: ['2026-03-01 12:00:00', '2026-03-01T12:00:00.000Z'],
  });
