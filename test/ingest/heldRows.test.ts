import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { CodeResolver } from '../../src/data/ingest/codes.ts';
import type { HeldRowsOptions } from '../../src/data/ingest/copyPass.ts';
import {
  dedicatedConnection,
  knownCurrencyCodes,
  type Connect,
} from '../../src/data/ingest/connection.ts';
import { fileUnit, planFile } from '../../src/data/ingest/files.ts';
import { loadUnit } from '../../src/data/ingest/loader.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { tempDir } from './fixtures.ts';
import { range, storedRows } from './storedRows.ts';

// Rows of a file that might meet stored ones (inside a currency's stored span) are held in
// memory a batch at a time and matched against the keys stored in the batch's window; the
// unmatched go in by the next direct COPY, between the rows outside every span. A batch whose
// window holds more stored keys than a bound goes through the staging table instead. Whatever
// the batch size, the bound and the file's order, the table must end the same: stored rows
// untouched, every new row once, the counts exact, every inserted row marked for the rollups
// and no mark outside what was inserted.

let runtime: TestRuntime;
let files: Awaited<ReturnType<typeof tempDir>>;
let connect: Connect;
let helpers: ReturnType<typeof storedRows>;

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  files = await tempDir();
  connect = dedicatedConnection(runtime.config.DATABASE_URL);
  helpers = storedRows(runtime, files);
});

afterAll(async () => {
  await files.remove();
  await runtime.dispose();
});

/**
 * Loads a file on a connection of its own with the given batch options; also tells whether the
 * load's session created the staging table (it does only when a batch was staged).
 */
async function load(path: string, held: HeldRowsOptions) {
  const connection = await connect();
  try {
    const codes = new CodeResolver(await knownCurrencyCodes(connection.client));
    const unit = await fileUnit(await planFile(path), codes);
    const result = await loadUnit(connection.client, unit, { held });
    const { rows } = await connection.client.query<{ staged: boolean }>(
      `SELECT to_regclass('pg_temp.ingest_merge_stage') IS NOT NULL AS staged`,
    );
    return { result, staged: rows[0]?.staged };
  } finally {
    await connection.release();
  }
}

/**
 * The layout every case loads, minutes 0-299 of two currencies, time-major, so that rows inside
 * and outside the stored spans alternate row by row:
 * - `inner` holds every third minute of 100-199: its rows 0-99 and 200-299 are outside its span;
 * - `outer` holds the even minutes of 0-48 and 250-259: its rows up to 259 are inside its span.
 */
async function alternatingCase(
  name: string,
  t0: number,
  [inner, outer]: [string, string],
  order: 'oldest first' | 'newest first',
) {
  const innerStored = range(100, 200).filter((m) => m % 3 === 1);
  const outerStored = [...range(0, 50).filter((m) => m % 2 === 0), ...range(250, 260)];
  await helpers.store(inner, t0, innerStored);
  await helpers.store(outer, t0, outerStored);
  const path = await helpers.csv(
    name,
    t0,
    [
      [inner, range(0, 300)],
      [outer, range(0, 300)],
    ],
    order,
  );
  return { path, stored: { [inner]: innerStored, [outer]: outerStored } };
}

/** Checks table, counts and marks after loading an alternatingCase. */
async function expectLoaded(
  t0: number,
  stored: Record<string, number[]>,
  result: Awaited<ReturnType<typeof load>>['result'],
) {
  const duplicates = Object.values(stored).reduce((n, minutes) => n + minutes.length, 0);
  expect(result).toMatchObject({
    status: 'loaded',
    read: 600,
    inserted: 600 - duplicates,
    duplicates,
    rejected: 0,
    path: 'merge',
  });
  for (const [code, storedMinutes] of Object.entries(stored)) {
    const kept = new Set(storedMinutes);
    expect(await helpers.table(code, t0)).toEqual(
      range(0, 300).map((m) => (kept.has(m) ? [m, 1000 + m, 'stored'] : [m, m + 1, 'csv'])),
    );
    const inserted = range(0, 300).filter((m) => !kept.has(m));
    expect(await helpers.allMarked(code, t0, inserted)).toBe(true);
    // Marks stay within the inserted rows: nothing is recomputed that the load did not touch.
    for (const [from, to] of await helpers.marks(code, t0)) {
      expect(from).toBeGreaterThanOrEqual(inserted[0]!);
      expect(to).toBeLessThanOrEqual(inserted[inserted.length - 1]!);
    }
  }
}

describe('held rows: matched against stored keys, whatever the batches', () => {
  test('one batch for the whole file: no row staged', async () => {
    const t0 = Date.UTC(2022, 0, 3);
    const { path, stored } = await alternatingCase('one.csv', t0, ['BTC', 'ETH'], 'oldest first');
    const { result, staged } = await load(path, {});
    await expectLoaded(t0, stored, result);
    expect(staged).toBe(false);
  });

  test('batches of 7 rows: the direct COPY is closed and reopened around each', async () => {
    const t0 = Date.UTC(2022, 1, 7);
    const { path, stored } = await alternatingCase('seven.csv', t0, ['SOL', 'XRP'], 'oldest first');
    const { result, staged } = await load(path, { batchRows: 7 });
    await expectLoaded(t0, stored, result);
    expect(staged).toBe(false);
  });

  test('batches whose window holds more stored keys than the bound go through the staging table', async () => {
    // With at most 2 stored keys read per batch, the batches over `outer`'s even minutes and
    // `inner`'s stored thirds are staged and anti-joined; the others are matched in memory.
    const t0 = Date.UTC(2022, 2, 7);
    const { path, stored } = await alternatingCase(
      'staged.csv',
      t0,
      ['ADA', 'DOGE'],
      'oldest first',
    );
    const { result, staged } = await load(path, { batchRows: 7, maxStoredKeys: 2 });
    await expectLoaded(t0, stored, result);
    expect(staged).toBe(true);
  });

  test('a file newest first, in batches of 7 rows', async () => {
    const t0 = Date.UTC(2022, 3, 4);
    const { path, stored } = await alternatingCase(
      'reverse.csv',
      t0,
      ['BNB', 'TRX'],
      'newest first',
    );
    const { result, staged } = await load(path, { batchRows: 7 });
    await expectLoaded(t0, stored, result);
    expect(staged).toBe(false);
  });

  test('loaded again: every row a duplicate, nothing written, no mark added', async () => {
    const t0 = Date.UTC(2022, 4, 2);
    const { path } = await alternatingCase('twice.csv', t0, ['LINK', 'AVAX'], 'oldest first');
    await load(path, { batchRows: 7 });
    const before = [await helpers.marks('LINK', t0), await helpers.marks('AVAX', t0)];
    const again = await load(path, { batchRows: 7 });
    // The file is recorded as loaded: forced, its rows are read again and found stored.
    expect(again.result.status).toBe('skipped');
    const connection = await connect();
    try {
      const codes = new CodeResolver(await knownCurrencyCodes(connection.client));
      const unit = await fileUnit(await planFile(path), codes);
      const forced = await loadUnit(connection.client, unit, {
        force: true,
        held: { batchRows: 7 },
      });
      expect(forced).toMatchObject({ status: 'loaded', read: 600, inserted: 0, duplicates: 600 });
    } finally {
      await connection.release();
    }
    expect([await helpers.marks('LINK', t0), await helpers.marks('AVAX', t0)]).toEqual(before);
  });
});
