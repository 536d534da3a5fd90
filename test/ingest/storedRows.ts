import { sql } from 'slonik';
import { z } from 'zod';
import { insertCandles } from '../support/prices.ts';
import type { TestRuntime } from '../support/runtime.ts';
import { MINUTE, type tempDir } from './fixtures.ts';

// What the loader tests (mergePath, heldRows) compare a load with: the whole table content of a
// currency as [minute index from t0, price, source], stored rows priced 1000 + minute with
// source 'stored', file rows priced minute + 1 with source 'csv', and the marks for the rollups.

const storedRow = z.object({ time: z.date(), open: z.number(), source: z.string() });
const mark = z.object({ range_start: z.date(), range_end: z.date() });

export const range = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => from + i);
export const fromFile = (minutes: number[]) => minutes.map((m) => [m, m + 1, 'csv']);
export const fromStore = (minutes: number[]) => minutes.map((m) => [m, 1000 + m, 'stored']);

export function storedRows(runtime: TestRuntime, files: Awaited<ReturnType<typeof tempDir>>) {
  /** Every stored row of a currency, as [minute index from t0, price, source]. */
  async function table(code: string, t0: number) {
    const rows = await runtime.pool.any(sql.type(storedRow)`
      SELECT time, open, source FROM price_observations WHERE currency_code = ${code} ORDER BY time`);
    return rows.map((r) => [(r.time.getTime() - t0) / MINUTE, r.open, r.source]);
  }

  /** The marks for the rollups of a currency, as [first, last] minute indexes from t0. */
  async function marks(code: string, t0: number) {
    const rows = await runtime.pool.any(sql.type(mark)`
      SELECT range_start, range_end FROM price_invalidations WHERE currency_code = ${code}`);
    return rows.map((k) => [
      (k.range_start.getTime() - t0) / MINUTE,
      (k.range_end.getTime() - t0) / MINUTE,
    ]);
  }

  /** True when every given minute of a currency lies inside a mark for the rollups. */
  async function allMarked(code: string, t0: number, minutes: number[]) {
    const found = await marks(code, t0);
    return minutes.every((m) => found.some(([from, to]) => from! <= m && m <= to!));
  }

  const marksOf = async (code: string) => (await marks(code, 0)).length;

  /** Stores minutes of a currency with price 1000 + minute and source 'stored'. */
  const store = (code: string, t0: number, minutes: number[]) =>
    insertCandles(
      runtime.pool,
      minutes.map((m) => ({ code, time: new Date(t0 + m * MINUTE), open: 1000 + m })),
      'stored',
    );

  /**
   * A CSV with one row per (minute, code), time-major like an export (newest first with
   * `reverse`); price = minute + 1.
   */
  async function csv(
    name: string,
    t0: number,
    rows: Array<[string, number[]]>,
    order: 'oldest first' | 'newest first' = 'oldest first',
  ) {
    const lines = ['time,code,price'];
    const byMinute = new Map<number, string[]>();
    for (const [code, minutes] of rows) {
      for (const m of minutes) byMinute.set(m, [...(byMinute.get(m) ?? []), code]);
    }
    const minutes = [...byMinute.keys()].sort((a, b) => a - b);
    if (order === 'newest first') minutes.reverse();
    for (const m of minutes) {
      for (const code of byMinute.get(m) ?? []) {
        lines.push(`${new Date(t0 + m * MINUTE).toISOString()},${code},${m + 1}`);
      }
    }
    return files.file(name, lines.join('\n'));
  }

  return { table, marks, allMarked, marksOf, store, csv };
}
