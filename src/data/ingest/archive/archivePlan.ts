// Which pieces a range of history is fetched in from Binance's archives: whole months ended by
// now as monthly archives, whole days ended by now as daily archives (the current month's, and
// the other months' edges), and what no archive can hold yet (today, partial days at the ends) as
// REST klines. Missing archives fall back a level: a month to its days, a day to REST.

const DAY_MS = 86_400_000;

/** The `backfill --source` name of this path. */
export const ARCHIVE_SOURCE = 'binance-archive';

export interface ArchivePeriodPart {
  kind: 'monthly' | 'daily';
  /** YYYY-MM or YYYY-MM-DD, as in the archive's name. */
  period: string;
  fromMs: number;
  toMs: number;
}

export interface RestPart {
  kind: 'rest';
  fromMs: number;
  toMs: number;
}

export type ArchivePart = ArchivePeriodPart | RestPart;

const monthStart = (ms: number) => {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
};
const nextMonthStart = (ms: number) => {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
};
const dayStart = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS;

/** Cuts [fromMs, toMs) into monthly archives, daily archives and REST ranges, in time order. */
export function planArchiveParts(fromMs: number, toMs: number, nowMs: number): ArchivePart[] {
  const parts: ArchivePart[] = [];
  let t = fromMs;
  while (t < toMs) {
    const monthEnd = nextMonthStart(t);
    if (t === monthStart(t) && monthEnd <= toMs && monthEnd <= nowMs) {
      parts.push(periodPart('monthly', t, monthEnd));
      t = monthEnd;
      continue;
    }
    const dayEnd = dayStart(t) + DAY_MS;
    if (t === dayStart(t) && dayEnd <= toMs && dayEnd <= nowMs) {
      parts.push(periodPart('daily', t, dayEnd));
      t = dayEnd;
      continue;
    }
    const end = Math.min(toMs, dayEnd);
    pushRest(parts, t, end);
    t = end;
  }
  return parts;
}

/** What a missing archive is fetched as instead: a month's days, or a day from REST. */
export function fallbackParts(part: ArchivePeriodPart): ArchivePart[] {
  if (part.kind === 'daily') return [{ kind: 'rest', fromMs: part.fromMs, toMs: part.toMs }];
  const days: ArchivePart[] = [];
  for (let t = part.fromMs; t < part.toMs; t += DAY_MS)
    days.push(periodPart('daily', t, t + DAY_MS));
  return days;
}

function periodPart(kind: 'monthly' | 'daily', fromMs: number, toMs: number): ArchivePeriodPart {
  const iso = new Date(fromMs).toISOString();
  return { kind, period: kind === 'monthly' ? iso.slice(0, 7) : iso.slice(0, 10), fromMs, toMs };
}

/** Adjacent REST ranges are one range: fewer, fuller pages. */
function pushRest(parts: ArchivePart[], fromMs: number, toMs: number) {
  const last = parts[parts.length - 1];
  if (last?.kind === 'rest' && last.toMs === fromMs) last.toMs = toMs;
  else parts.push({ kind: 'rest', fromMs, toMs });
}
