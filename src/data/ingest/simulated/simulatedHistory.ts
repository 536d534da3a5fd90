import type pg from 'pg';
import { createSimulatedMarket } from '../../market/sources/simulated.ts';
import type { Connect } from '../connection.ts';
import { loadUnit } from '../loader.ts';
import type { UnitResult } from '../types.ts';
import {
  candlesOf,
  planSimulatedDays,
  sampleDay,
  SIMULATED_SOURCE,
  simulatedDayKey,
  simulatedDayLabel,
  type DayPrices,
  type SimulatedDay,
} from './days.ts';

// Loads simulated history day by day through the bulk loader (binary COPY, touched-range marks
// for the rollups and a completion record per day, all in one transaction per day). The next day
// is sampled while the current one is being copied: the database works on its core while this
// process computes, so a month of every currency takes about as long as its COPY alone.

export interface SimulatedHistoryRequest {
  seed: string;
  /** History ends here (floored to the minute): where the live prices take over. */
  untilMs: number;
  days: number;
  /** Only these currencies; every currency of the list when absent. */
  codes?: string[];
}

export interface SimulatedHistoryOptions {
  /** Load days that are recorded as loaded again (their rows count as duplicates). */
  force?: boolean;
  /** After each day: its result, and how many of the plan's days are now loaded. */
  onDay?: (result: UnitResult, loaded: number, total: number) => void;
}

export async function loadSimulatedHistory(
  connect: Connect,
  request: SimulatedHistoryRequest,
  options: SimulatedHistoryOptions = {},
): Promise<UnitResult[]> {
  const plan = planSimulatedDays(request.seed, request.untilMs, request.days);
  const connection = await connect();
  let broken: Error | undefined;
  try {
    const { client } = connection;
    const codes = request.codes ?? (await currencyCodes(client));
    if (codes.length === 0) throw new Error('no currencies yet: the data role installs the list');
    const loaded = options.force ? new Set<string>() : await loadedKeys(client, plan);
    const todo = plan.filter((day) => !loaded.has(simulatedDayKey(day)));
    const market = createSimulatedMarket(request.seed);
    const results: UnitResult[] = [];
    let next = todo[0] ? sampleDay(market, codes, todo[0]) : null;
    for (let i = 0; next; i++) {
      const prices = await next;
      const following = todo[i + 1];
      next = following ? sampleDay(market, codes, following) : null;
      // Awaited next round; a failure of this day's load must not leave it unhandled meanwhile.
      next?.catch(() => {});
      const result = await loadDay(client, prices, !!options.force);
      results.push(result);
      options.onDay?.(result, plan.length - todo.length + i + 1, plan.length);
    }
    return results;
  } catch (error) {
    broken = error as Error;
    throw error;
  } finally {
    await connection.release(broken);
  }
}

/** One day of every currency as one unit; the overlap check sends a load over stored rows to the merge path. */
function loadDay(client: pg.ClientBase, prices: DayPrices, force: boolean): Promise<UnitResult> {
  const { day, codes } = prices;
  const label = simulatedDayLabel(day);
  return loadUnit(
    client,
    {
      key: simulatedDayKey(day),
      kind: 'simulated',
      label,
      source: SIMULATED_SOURCE,
      rows: async function* () {
        for (let c = 0; c < codes.length; c++) {
          yield { file: label, candles: candlesOf(prices, c), rejections: [], bytes: 0 };
        }
      },
      expected: codes.map((code) => ({
        code,
        from: new Date(day.fromMs),
        to: new Date(day.toMs - 60_000),
      })),
    },
    { force },
  );
}

async function currencyCodes(client: pg.ClientBase): Promise<string[]> {
  const result = await client.query<{ code: string }>('SELECT code FROM currencies ORDER BY code');
  return result.rows.map((r) => r.code);
}

async function loadedKeys(client: pg.ClientBase, plan: SimulatedDay[]): Promise<Set<string>> {
  const result = await client.query<{ unit_key: string }>(
    'SELECT unit_key FROM ingest_units WHERE unit_key = ANY($1::text[])',
    [plan.map(simulatedDayKey)],
  );
  return new Set(result.rows.map((r) => r.unit_key));
}
