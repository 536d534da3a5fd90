// Timestamps arrive as ISO 8601 text or as epoch numbers in seconds, milliseconds, microseconds or
// nanoseconds. Binance switched its spot archives from ms to µs in 2025, and a file is consistent
// within itself, so the unit is detected once per file (from the first epoch value's magnitude)
// and a later value of another magnitude is a malformed row rather than a silently wrong date.

export type EpochUnit = 's' | 'ms' | 'us' | 'ns';

const MICROS_PER: Record<EpochUnit, number> = { s: 1e6, ms: 1e3, us: 1, ns: 1e-3 };

/**
 * The unit an epoch value is in, by magnitude: up to 1e11 seconds (year 5138), up to 1e14
 * milliseconds, up to 1e17 microseconds, up to 1e20 nanoseconds. Today is ~1.7e9 s, 1.7e12 ms,
 * 1.7e15 µs and 1.7e18 ns, so every date from 1973 to 5138 is unambiguous.
 */
export function epochUnitOf(value: number): EpochUnit | null {
  if (!(value >= 0)) return null;
  if (value < 1e11) return 's';
  if (value < 1e14) return 'ms';
  if (value < 1e17) return 'us';
  if (value < 1e20) return 'ns';
  return null;
}

export const UNIT_NAMES: Record<EpochUnit, string> = {
  s: 'seconds',
  ms: 'milliseconds',
  us: 'microseconds',
  ns: 'nanoseconds',
};

const EPOCH_TEXT = /^\d+(\.\d+)?$/;
const ISO_TEXT =
  /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2})?)(?:\.(\d+))?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/** Parses ISO 8601 text to µs since the epoch; no zone means UTC (the platform's contract). */
export function parseIsoMicros(text: string): number | null {
  const canonical = canonicalIsoMicros(text);
  return canonical === null ? generalIsoMicros(text) : canonical;
}

/**
 * Any form ISO_TEXT admits, through Date.parse (days past a month's end roll over, 24:00 too):
 * the path every form took before the canonical one was read digit by digit, and the reference
 * that one is held to (test/ingest/fastParsing.test.ts).
 */
export function generalIsoMicros(text: string): number | null {
  const match = ISO_TEXT.exec(text);
  if (!match) return null;
  const [, date, clock, fraction = '', zone] = match;
  const ms = Date.parse(
    `${date}T${clock ?? '00:00:00'}${fraction ? `.${fraction.slice(0, 3).padEnd(3, '0')}` : ''}${zone ?? 'Z'}`,
  );
  if (Number.isNaN(ms)) return null;
  const extraMicros = fraction.length > 3 ? Number(fraction.slice(3, 6).padEnd(3, '0')) : 0;
  return ms * 1000 + extraMicros;
}

/** Turns time fields into µs since the epoch, fixing the epoch unit at the first epoch value. */
export class TimeParser {
  unit: EpochUnit | null;

  constructor(unit: EpochUnit | null = null) {
    this.unit = unit;
  }

  /** µs since the epoch, or the reason the text is not a time. */
  parse(text: string): number | string {
    const canonical = canonicalIsoMicros(text);
    if (canonical !== null) return canonical;
    const trimmed = text.trim();
    if (trimmed === '') return 'time is empty';
    if (EPOCH_TEXT.test(trimmed)) return this.parseEpoch(Number(trimmed));
    const micros = parseIsoMicros(trimmed);
    return micros ?? `time '${clip(trimmed)}' is neither ISO 8601 nor an epoch number`;
  }

  parseEpoch(value: number): number | string {
    const unit = epochUnitOf(value);
    if (!unit) return `time ${value} is not a valid epoch value`;
    this.unit ??= unit;
    if (unit !== this.unit) {
      return `time ${value} looks like ${UNIT_NAMES[unit]} but this file's timestamps are in ${UNIT_NAMES[this.unit]}`;
    }
    return Math.round(value * MICROS_PER[unit]);
  }
}

export function clip(text: string, max = 40): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** µs since the epoch as ISO 8601 text (a timestamptz literal), exact to the microsecond. */
export function microsToIso(us: number): string {
  const ms = Math.floor(us / 1000);
  const rest = String(us - ms * 1000).padStart(3, '0');
  return new Date(ms).toISOString().replace('Z', `${rest}Z`);
}

const DIGIT_0 = 48;

/** The digits of `text` from `at` to `at + count` as a number, or -1 if any is not a digit. */
function digitsAt(text: string, at: number, count: number): number {
  let value = 0;
  for (let i = at; i < at + count; i++) {
    const digit = text.charCodeAt(i) - DIGIT_0;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

/** Days from 1970-01-01 to a proleptic Gregorian date; days past the month's end roll over. */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra =
    yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/**
 * The form exports write, `YYYY-MM-DDTHH:MM:SS[.fraction][Z]` (or a space for the T), read digit
 * by digit: a regular expression, a rebuilt string and Date.parse cost several times more, and a
 * file has a million of them. Returns null for anything else, and for values Date.parse treats
 * specially (hour 24), which then take the general path: both accept exactly the same text with
 * the same value (test/ingest/fastParsing.test.ts compares them).
 */
function canonicalIsoMicros(text: string): number | null {
  const length = text.length;
  if (length < 19 || text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45) return null; // '-'
  const separator = text.charCodeAt(10);
  if (separator !== 84 && separator !== 32) return null; // 'T' or ' '
  if (text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58) return null; // ':'
  const year = digitsAt(text, 0, 4);
  const month = digitsAt(text, 5, 2);
  const day = digitsAt(text, 8, 2);
  const hour = digitsAt(text, 11, 2);
  const minute = digitsAt(text, 14, 2);
  const second = digitsAt(text, 17, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || day > 31) return null;
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return null;
  let at = 19;
  let micros = 0;
  if (at < length && text.charCodeAt(at) === 46) {
    // '.': any number of digits, of which the first six count (as Date.parse's path keeps them).
    at++;
    const start = at;
    for (; at < length; at++) {
      const digit = text.charCodeAt(at) - DIGIT_0;
      if (digit < 0 || digit > 9) break;
      if (at - start < 6) micros = micros * 10 + digit;
    }
    if (at === start) return null;
    for (let kept = Math.min(at - start, 6); kept < 6; kept++) micros *= 10;
  }
  if (at < length && (text.charCodeAt(at) === 90 || text.charCodeAt(at) === 122)) at++; // 'Z', 'z'
  if (at !== length) return null;
  const seconds = daysFromCivil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
  return seconds * 1_000_000 + micros;
}
