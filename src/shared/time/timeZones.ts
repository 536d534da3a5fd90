// Time-zone facts from the JavaScript runtime's own tz database (Intl), used to validate zone
// names and to decide which rollup levels nest inside local calendar buckets.

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let found = formatters.get(timeZone);
  if (!found) {
    found = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, found);
  }
  return found;
}

/** True when the runtime knows the IANA zone name (e.g. Europe/Berlin, America/New_York, UTC). */
export function isKnownTimeZone(name: string): boolean {
  try {
    formatter(name);
    return true;
  } catch {
    return false;
  }
}

/** UTC offset of the zone at an instant, in whole seconds (local wall clock minus UTC). */
export function zoneOffsetSeconds(timeZone: string, ms: number): number {
  const parts: Record<string, number> = {};
  for (const part of formatter(timeZone).formatToParts(new Date(ms))) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  const year = parts.year!;
  const asUtc = Date.UTC(year, parts.month! - 1, parts.day, parts.hour, parts.minute, parts.second);
  // Date.UTC maps years 0..99 to 1900..1999.
  const fixed = year < 100 ? new Date(asUtc).setUTCFullYear(year) : asUtc;
  return Math.round((fixed - Math.floor(ms / 1000) * 1000) / 1000);
}

const DAY = 86_400_000;

/**
 * Offsets at whole UTC days (weeks for long windows), per zone. Every zone request samples a
 * window's days (a year: 366 formatToParts calls, about 3 ms of CPU, more than the rest of the
 * request), and consecutive requests share nearly all those instants once they sit on whole
 * days. An offset depends only on the zone and the instant (the runtime's tz database does not
 * change while it runs), so the kept values never go stale; the memory is bounded.
 */
const sampledOffsets = new Map<string, Map<number, number>>();
const MAX_KEPT_SAMPLES = 200_000;
let keptSamples = 0;

function offsetAtSample(timeZone: string, ms: number): number {
  let zone = sampledOffsets.get(timeZone);
  const kept = zone?.get(ms);
  if (kept !== undefined) return kept;
  if (keptSamples >= MAX_KEPT_SAMPLES) {
    sampledOffsets.clear();
    keptSamples = 0;
    zone = undefined;
  }
  if (!zone) {
    zone = new Map();
    sampledOffsets.set(timeZone, zone);
  }
  const offset = zoneOffsetSeconds(timeZone, ms);
  zone.set(ms, offset);
  keptSamples++;
  return offset;
}

/**
 * Every distinct offset the zone uses over [from, to]: both ends, and every whole UTC day
 * between them (offsets that last less than a day do not occur in the tz database, so every
 * other offset covers one of those days). Windows longer than ten years are sampled weekly to
 * keep this cheap.
 */
export function zoneOffsetsOver(timeZone: string, from: number, to: number): number[] {
  const step = to - from > 3650 * DAY ? 7 * DAY : DAY;
  const offsets = new Set<number>([
    zoneOffsetSeconds(timeZone, to),
    zoneOffsetSeconds(timeZone, from),
  ]);
  for (let t = Math.ceil(from / step) * step; t < to; t += step) {
    offsets.add(offsetAtSample(timeZone, t));
  }
  return [...offsets];
}
