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
