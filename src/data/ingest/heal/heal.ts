import type pg from 'pg';
import type { Connect } from '../connection.ts';
import type { CandleSource, RawKline } from '../exchange/candleSource.ts';
import { klinesToCandles } from '../exchange/exchangeBackfill.ts';
import { ExchangeError } from '../exchange/patientHttp.ts';
import { loadUnit } from '../loader.ts';
import type { Candle } from '../types.ts';
import { healFilledCandles, healKnownGapCandles } from '../../../shared/metrics.ts';
import {
  addHealedMinutes,
  healWindow,
  openMinutes,
  recordOpenMinutes,
  type HealWindow,
} from './openGaps.ts';

// Gap healing: the minutes of a look-back window (after a currency's first observation) that have
// no observation are fetched as one-minute candles from the exchanges, in order (what the first
// lacks is asked of the next), and loaded through the normal ingest path (never overwriting,
// source recorded, rollup ranges marked). Minutes that every exchange answered it does not have
// are remembered in price_gaps, so they are not asked for again; when an exchange failed instead,
// nothing is remembered and the next pass asks again.

const MINUTE = 60_000;

export interface HealRange {
  fromMs: number;
  toMs: number;
}

export interface HealResult {
  code: string;
  /** Minutes without observation found in the window (known gaps excluded). */
  missing: number;
  filled: number;
  /** Minutes newly recorded as known gaps. */
  knownGaps: number;
  /** Another process held this currency's heal lock: nothing done. */
  skipped: boolean;
  /** Minutes filled, by exchange. */
  bySource: Record<string, number>;
  /** Exchange failures (the minutes concerned stay open for the next pass). */
  errors: string[];
}

export interface HealOptions {
  lookbackHours: number;
  now?: number;
}

/** The open minutes of one currency in the window, as contiguous ranges. */
export async function findGaps(
  client: pg.ClientBase,
  code: string,
  window: HealWindow,
): Promise<HealRange[]> {
  const ranges: HealRange[] = [];
  for (const t of await openMinutes(client, code, window)) {
    const last = ranges[ranges.length - 1];
    if (last && last.toMs === t) last.toMs = t + MINUTE;
    else ranges.push({ fromMs: t, toMs: t + MINUTE });
  }
  return ranges;
}

/** Heals one currency; a session advisory lock keeps concurrent passes off the same currency. */
export async function healCurrency(
  connect: Connect,
  sources: CandleSource[],
  code: string,
  options: HealOptions,
): Promise<HealResult> {
  const window = healWindow(options.now ?? Date.now(), options.lookbackHours);
  const result: HealResult = {
    code,
    missing: 0,
    filled: 0,
    knownGaps: 0,
    skipped: false,
    bySource: {},
    errors: [],
  };
  const connection = await connect();
  let broken: Error | undefined;
  try {
    const db = connection.client;
    const lock = await db.query<{ ok: boolean }>(
      `SELECT pg_try_advisory_lock(hashtext('heal:' || $1)) AS ok`,
      [code],
    );
    if (!lock.rows[0]?.ok) return { ...result, skipped: true };
    try {
      const gaps = await findGaps(db, code, window);
      for (const range of gaps) {
        result.missing += (range.toMs - range.fromMs) / MINUTE;
        const settled = await healRange(db, sources, code, range, result);
        if (settled) result.knownGaps += await rememberGaps(db, code, range);
      }
      // What is still open, counted again only where there was something to heal.
      const open = gaps.length === 0 ? 0 : (await openMinutes(db, code, window)).length;
      await recordOpenMinutes(db, code, open);
    } finally {
      await db.query(`SELECT pg_advisory_unlock(hashtext('heal:' || $1))`, [code]);
    }
    // Every exchange asked has its series, at 0 until it fills a minute.
    for (const { name } of sources) healFilledCandles.inc({ source: name }, 0);
    for (const [source, filled] of Object.entries(result.bySource)) {
      healFilledCandles.inc({ source }, filled);
    }
    healKnownGapCandles.inc({ source: sources.map((s) => s.name).join('+') }, result.knownGaps);
    return result;
  } catch (error) {
    broken = error as Error;
    throw error;
  } finally {
    await connection.release(broken);
  }
}

/**
 * Asks each exchange in turn for what is still open in `range` and loads what it has. True when
 * every exchange answered (so what is still open is a known gap), false when one failed.
 */
async function healRange(
  db: pg.ClientBase,
  sources: CandleSource[],
  code: string,
  range: HealRange,
  result: HealResult,
): Promise<boolean> {
  let open: HealRange[] = [range];
  let settled = true;
  for (const source of sources) {
    const stillOpen: HealRange[] = [];
    for (const part of open) {
      let candles: Candle[];
      try {
        candles = await fetchRange(source, code, part);
      } catch (error) {
        if (!(error instanceof ExchangeError)) throw error;
        if (!isUnlisted(error)) {
          settled = false;
          result.errors.push(`${source.name}: ${error.message}`);
        }
        stillOpen.push(part);
        continue;
      }
      if (candles.length > 0) {
        const label = `heal ${source.name} ${code} ${new Date(part.fromMs).toISOString()}..${new Date(part.toMs).toISOString()}`;
        const loaded = await loadUnit(db, {
          key: null,
          kind: 'exchange',
          label,
          source: source.name,
          rows: async function* () {
            yield { file: label, candles, rejections: [], bytes: 0 };
          },
          expected: [{ code, from: new Date(part.fromMs), to: new Date(part.toMs) }],
          afterWrite: (client, loaded) => addHealedMinutes(client, source.name, loaded.inserted),
        });
        result.filled += loaded.inserted;
        result.bySource[source.name] = (result.bySource[source.name] ?? 0) + loaded.inserted;
      }
      stillOpen.push(...uncovered(part, candles));
    }
    open = stillOpen;
    if (open.length === 0) break;
  }
  return settled;
}

/** A refusal that means "no such pair here" (the exchange does not list the currency). */
function isUnlisted(error: ExchangeError): boolean {
  return (
    !error.retryable && (error.status === undefined || error.status === 400 || error.status === 404)
  );
}

/** The minutes of `range` that none of `candles` covers, as contiguous ranges. */
function uncovered(range: HealRange, candles: Candle[]): HealRange[] {
  const covered = new Set(candles.map((c) => Math.floor(c.timeUs / 1000 / MINUTE) * MINUTE));
  const ranges: HealRange[] = [];
  for (let t = range.fromMs; t < range.toMs; t += MINUTE) {
    if (covered.has(t)) continue;
    const last = ranges[ranges.length - 1];
    if (last && last.toMs === t) last.toMs = t + MINUTE;
    else ranges.push({ fromMs: t, toMs: t + MINUTE });
  }
  return ranges;
}

async function fetchRange(source: CandleSource, code: string, range: HealRange) {
  const pages = source.candles(source.symbol(code), '1m', range.fromMs, range.toMs);
  const raw: RawKline[] = [];
  for await (const page of pages) raw.push(...page);
  return klinesToCandles(raw, code).candles;
}

/** The minutes of a range still without observation after the fetch become known gaps. */
async function rememberGaps(db: pg.ClientBase, code: string, range: HealRange): Promise<number> {
  const { rowCount } = await db.query(
    `INSERT INTO price_gaps (currency_code, minute)
     SELECT $1, m
       FROM generate_series(to_timestamp($2::double precision / 1000),
                            to_timestamp($3::double precision / 1000) - interval '1 minute',
                            interval '1 minute') AS m
      WHERE NOT EXISTS (SELECT 1 FROM price_observations o
                         WHERE o.currency_code = $1 AND o.time >= m AND o.time < m + interval '1 minute')
     ON CONFLICT DO NOTHING`,
    [code, range.fromMs, range.toMs],
  );
  return rowCount ?? 0;
}

/**
 * Currencies healed at once. A currency's pass mostly waits (on the database, then the exchange),
 * so a few side by side keep both busy: 136 currencies after a 6-hour outage heal in about half
 * the time (bench/RESULTS.md). The exchanges' clients are shared, so their rate limits hold for
 * the whole pass; each currency has a connection of its own.
 */
const CURRENCIES_AT_ONCE = 4;

/** One pass over the given currencies; results in their order. The first failure stops it. */
export async function healAll(
  connect: Connect,
  sources: CandleSource[],
  codes: string[],
  options: HealOptions,
): Promise<HealResult[]> {
  const results: HealResult[] = [];
  let next = 0;
  let failed = false;
  const healInTurn = async () => {
    while (!failed && next < codes.length) {
      const index = next++;
      try {
        results[index] = await healCurrency(connect, sources, codes[index]!, options);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  const lanes = Array.from({ length: Math.min(CURRENCIES_AT_ONCE, codes.length) }, healInTurn);
  // Every lane ends before the pass does, so no currency is still being healed after a failure.
  const outcomes = await Promise.allSettled(lanes);
  const failure = outcomes.find((o) => o.status === 'rejected');
  if (failure) throw failure.reason;
  return results;
}

/** Every currency with at least one observation (healing starts after the first). */
export async function observedCodes(connect: Connect): Promise<string[]> {
  const connection = await connect();
  try {
    const { rows } = await connection.client.query<{ code: string }>(
      `SELECT code FROM currencies c
        WHERE EXISTS (SELECT 1 FROM price_observations o WHERE o.currency_code = c.code)
        ORDER BY code`,
    );
    return rows.map((r) => r.code);
  } finally {
    await connection.release();
  }
}
