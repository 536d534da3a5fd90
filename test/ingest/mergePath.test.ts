import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { dedicatedConnection, type Connect } from '../../src/data/ingest/connection.ts';
import { importFile } from '../../src/data/ingest/importFile.ts';
import { loadUnit, type UnitSpec } from '../../src/data/ingest/loader.ts';
import type { Candle, ReadBatch } from '../../src/data/ingest/types.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { eventually } from '../support/wait.ts';
import { MINUTE, tempDir } from './fixtures.ts';
import { fromFile, fromStore, range, storedRows } from './storedRows.ts';

// The loader decides per row, from the stored span of each currency looked at before the first
// row, whether a row goes straight into the hypertable or is first matched against the stored
// keys (heldRows.test.ts covers the batches and the staging fallback of that). Whatever it
// decides, the stored rows must stay as they were, every new row must be stored exactly once,
// and every inserted row must be marked for the rollups. Each case compares the whole table
// content of its currencies with what it must be.

let runtime: TestRuntime;
let files: Awaited<ReturnType<typeof tempDir>>;
let connect: Connect;
let table: ReturnType<typeof storedRows>['table'];
let allMarked: ReturnType<typeof storedRows>['allMarked'];
let marksOf: ReturnType<typeof storedRows>['marksOf'];
let store: ReturnType<typeof storedRows>['store'];
let csv: ReturnType<typeof storedRows>['csv'];

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  files = await tempDir();
  connect = dedicatedConnection(runtime.config.DATABASE_URL);
  ({ table, allMarked, marksOf, store, csv } = storedRows(runtime, files));
});

afterAll(async () => {
  await files.remove();
  await runtime.dispose();
});

describe('the stored span decides the path; no row is lost or doubled', () => {
  test('a file that meets no stored row goes straight in, even beside stored history', async () => {
    const t0 = Date.UTC(2021, 0, 1);
    // ETH has history, but only after the file's minutes; SOL has none.
    await store('ETH', t0, range(200, 210));
    const path = await csv('fresh.csv', t0, [
      ['ETH', range(0, 100)],
      ['SOL', range(0, 100)],
    ]);
    const result = await importFile(connect, path);
    expect(result).toMatchObject({ status: 'loaded', read: 200, inserted: 200, duplicates: 0 });
    expect(result.path).toBe('direct');
    expect(await table('ETH', t0)).toEqual([
      ...fromFile(range(0, 100)),
      ...fromStore(range(200, 210)),
    ]);
    expect(await table('SOL', t0)).toEqual(fromFile(range(0, 100)));
    expect(await allMarked('ETH', t0, range(0, 100))).toBe(true);
    expect(await allMarked('SOL', t0, range(0, 100))).toBe(true);
  });

  test('a file whose every row is stored adds nothing, changes nothing, marks nothing', async () => {
    const t0 = Date.UTC(2021, 1, 1);
    await store('BNB', t0, range(0, 50));
    const path = await csv('stored.csv', t0, [['BNB', range(0, 50)]]);
    const result = await importFile(connect, path);
    expect(result).toMatchObject({ status: 'loaded', inserted: 0, duplicates: 50, path: 'merge' });
    expect(await table('BNB', t0)).toEqual(fromStore(range(0, 50)));
    expect(await marksOf('BNB')).toBe(0);
  });

  test('overlap that differs per currency: holes are filled, stored rows win', async () => {
    const t0 = Date.UTC(2021, 2, 1);
    // DOGE: the newer half is stored (the file's first rows go straight in, the rest is merged).
    // LINK: the older half is stored, except two holes inside it.
    // AVAX: nothing stored.
    await store('DOGE', t0, range(60, 120));
    const linkStored = range(0, 60).filter((m) => m !== 10 && m !== 45);
    await store('LINK', t0, linkStored);
    const path = await csv('mixed.csv', t0, [
      ['DOGE', range(0, 120)],
      ['LINK', range(0, 120)],
      ['AVAX', range(0, 120)],
    ]);
    const result = await importFile(connect, path);
    const linkNew = [10, 45, ...range(60, 120)];
    expect(result).toMatchObject({
      status: 'loaded',
      read: 360,
      inserted: 60 + linkNew.length + 120,
      duplicates: 60 + linkStored.length,
      path: 'merge',
    });
    expect(await table('DOGE', t0)).toEqual([
      ...fromFile(range(0, 60)),
      ...fromStore(range(60, 120)),
    ]);
    const link = await table('LINK', t0);
    expect(link).toEqual(
      range(0, 120).map((m) =>
        linkStored.includes(m) ? [m, 1000 + m, 'stored'] : [m, m + 1, 'csv'],
      ),
    );
    expect(await table('AVAX', t0)).toEqual(fromFile(range(0, 120)));
    expect(await allMarked('DOGE', t0, range(0, 60))).toBe(true);
    expect(await allMarked('LINK', t0, linkNew)).toBe(true);
    expect(await allMarked('AVAX', t0, range(0, 120))).toBe(true);
  });

  test('a row repeated where no stored row is: stored once, the unit redone checked', async () => {
    const t0 = Date.UTC(2021, 3, 1);
    const path = await files.file(
      'repeat-new.csv',
      [
        'time,code,price',
        `${new Date(t0).toISOString()},DOT,1`,
        `${new Date(t0 + MINUTE).toISOString()},DOT,2`,
        `${new Date(t0 + MINUTE).toISOString()},DOT,3`,
      ].join('\n'),
    );
    expect(await importFile(connect, path)).toMatchObject({
      status: 'loaded',
      inserted: 2,
      duplicates: 1,
      path: 'merge',
    });
    expect(await table('DOT', t0)).toEqual([
      [0, 1, 'csv'],
      [1, 2, 'csv'],
    ]);
  });
});

describe('units read row by row', () => {
  const t0 = Date.UTC(2021, 4, 1);

  /**
   * A unit of `minutes` of one currency that counts how often it is read. With `race`, its
   * first pass runs it after the first batch, before the unit writes anything: another writer
   * storing a row the look at the stored spans did not see.
   */
  function countedUnit(code: string, minutes: number[], label: string, race?: () => Promise<void>) {
    let passes = 0;
    const candle = (m: number, line: number): Candle => ({
      code,
      timeUs: (t0 + m * MINUTE) * 1000,
      open: m + 1,
      high: m + 1,
      low: m + 1,
      close: m + 1,
      volume: 0,
      line,
    });
    const batchOf = (part: number[], offset: number): ReadBatch => ({
      file: label,
      candles: part.map((m, i) => candle(m, offset + i + 1)),
      rejections: [],
      bytes: 0,
    });
    const unit: UnitSpec = {
      key: null,
      kind: 'file',
      label,
      source: 'csv',
      rows: async function* () {
        passes++;
        const half = Math.floor(minutes.length / 2);
        yield batchOf(minutes.slice(0, half), 0);
        if (passes === 1 && race) await race();
        yield batchOf(minutes.slice(half), half);
      },
    };
    return { unit, passes: () => passes };
  }

  async function load(unit: UnitSpec) {
    const connection = await connect();
    try {
      return await loadUnit(connection.client, unit);
    } finally {
      await connection.release();
    }
  }

  beforeAll(async () => {
    // Another currency's row creates the week's chunk: a racing writer must not wait for a
    // unit's transaction to commit the chunk it would otherwise create.
    await store('BTC', t0, [0]);
  });

  test('a unit that meets stored rows half-way is read once: no attempt is wasted', async () => {
    await store('TON', t0, range(20, 40));
    const { unit, passes } = countedUnit('TON', range(0, 40), 'half-stored');
    expect(await load(unit)).toMatchObject({ inserted: 20, duplicates: 20, path: 'merge' });
    expect(passes()).toBe(1);
    expect(await table('TON', t0)).toEqual([
      ...fromFile(range(0, 20)),
      ...fromStore(range(20, 40)),
    ]);
  });

  test('a row stored by another writer before the direct COPY reaches it: redone, it wins', async () => {
    const { unit, passes } = countedUnit('ATOM', range(0, 40), 'raced-direct', () =>
      store('ATOM', t0, [30]),
    );
    const result = await load(unit);
    expect(result).toMatchObject({ status: 'loaded', inserted: 39, duplicates: 1, path: 'merge' });
    expect(passes()).toBe(2);
    expect(await table('ATOM', t0)).toEqual(
      range(0, 40).map((m) => (m === 30 ? [m, 1030, 'stored'] : [m, m + 1, 'csv'])),
    );
  });

  test('a row stored by another writer before the new rows after held ones go in: nothing lost', async () => {
    // NEAR holds minutes 0 and 5, so the unit's first rows are inside the span and held; minutes
    // past 5 are certainly new at the look, and the race stores minute 35.
    await store('NEAR', t0, [0, 5]);
    const { unit } = countedUnit('NEAR', range(0, 40), 'raced-staged', () =>
      store('NEAR', t0, [35]),
    );
    const result = await load(unit);
    expect(result).toMatchObject({ status: 'loaded', inserted: 37, duplicates: 3, path: 'merge' });
    const stored = [0, 5, 35];
    expect(await table('NEAR', t0)).toEqual(
      range(0, 40).map((m) => (stored.includes(m) ? [m, 1000 + m, 'stored'] : [m, m + 1, 'csv'])),
    );
    expect(
      await allMarked(
        'NEAR',
        t0,
        range(0, 40).filter((m) => !stored.includes(m)),
      ),
    ).toBe(true);
  });
  test('a row repeated inside the stored span: stored once, the unit redone checked', async () => {
    // FIL holds minutes 0 and 10: every row is held as possibly stored, and minute 5 twice.
    await store('FIL', t0, [0, 10]);
    const { unit, passes } = countedUnit('FIL', [...range(0, 6), ...range(5, 11)], 'repeat-span');
    expect(await load(unit)).toMatchObject({
      status: 'loaded',
      read: 12,
      inserted: 9,
      duplicates: 3,
      path: 'merge',
    });
    expect(passes()).toBe(2);
    expect(await table('FIL', t0)).toEqual(
      range(0, 11).map((m) => (m === 0 || m === 10 ? [m, 1000 + m, 'stored'] : [m, m + 1, 'csv'])),
    );
    expect(await allMarked('FIL', t0, range(1, 10))).toBe(true);
  });

  test('a row another writer commits while the merge waits for it: redone, it wins', async () => {
    // APT holds minutes 0 and 39, so every row is matched against the stored ones. Another
    // transaction stores minute 20 and commits only once the load waits for its row lock: the
    // read of the stored keys did not see the row, the write of the unmatched ones meets it.
    await store('APT', t0, [0, 39]);
    const other = await connect();
    const connection = await connect();
    const loaderPid = (connection.client as unknown as { processID: number }).processID;
    const { unit, passes } = countedUnit('APT', range(0, 40), 'raced-merge', async () => {
      await other.client.query('BEGIN');
      await other.client.query(
        `INSERT INTO price_observations (currency_code, time, open, high, low, close, volume, source)
         VALUES ('APT', $1, 1020, 1020, 1020, 1020, 0, 'stored')`,
        [new Date(t0 + 20 * MINUTE)],
      );
    });
    try {
      const loading = loadUnit(connection.client, unit);
      await eventually(
        async () =>
          (await runtime.pool.oneFirst(
            sql.type(z.object({ waiting: z.boolean() }))`
              SELECT count(*) > 0 AS waiting FROM pg_stat_activity
              WHERE pid = ${loaderPid} AND wait_event_type = 'Lock'`,
          )) === true,
        60_000,
        'the merge to wait for the other writer',
      );
      await other.client.query('COMMIT');
      expect(await loading).toMatchObject({
        status: 'loaded',
        inserted: 37,
        duplicates: 3,
        path: 'merge',
      });
    } finally {
      await other.release();
      await connection.release();
    }
    expect(passes()).toBe(2);
    const stored = [0, 20, 39];
    expect(await table('APT', t0)).toEqual(
      range(0, 40).map((m) => (stored.includes(m) ? [m, 1000 + m, 'stored'] : [m, m + 1, 'csv'])),
    );
    expect(
      await allMarked(
        'APT',
        t0,
        range(0, 40).filter((m) => !stored.includes(m)),
      ),
    ).toBe(true);
  });
});
