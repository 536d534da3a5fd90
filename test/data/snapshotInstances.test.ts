import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql, type Interceptor } from 'slonik';
import { z } from 'zod';
import { recordHarvest } from '../../src/data/prices/recordHarvest.ts';
import { createDataService } from '../../src/data/service.ts';
import { createDatabasePool } from '../../src/shared/db/pool.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import {
  CHANGE_EVENTS_APPLICATION_NAME,
  createRuntime,
  type Runtime,
} from '../../src/shared/runtime.ts';
import { startDataModule, type DataModuleHarness } from '../support/dataModule.ts';
import { getJson, serve } from '../support/http.ts';
import { insertCandles, setSnapshot } from '../support/prices.ts';
import { eventually } from '../support/wait.ts';

// The snapshot route answers from an encoded copy kept per instance. Two instances on one
// database: a write through any path (the harvest, a bulk write of history, plain SQL) reaches
// the other instance's answers, and between writes the answers cost no query.

let first: DataModuleHarness;
let second: { runtime: Runtime; server: RunningServer; statements: () => number };

const HOUR = 3_600_000;
const all = (server: { url: string }, init: RequestInit = {}) =>
  getJson(`${server.url}/data/currency/all`, first.readToken, init);
const priceOf = (
  body: { currencies: Array<{ currencyCode: string; value: number }> },
  code: string,
) => body.currencies.find((c) => c.currencyCode === code)?.value;

beforeAll(async () => {
  first = await startDataModule();
  await setSnapshot(first.runtime.pool, 'BTC', 50_000, new Date(Date.now() - 60_000));
  await setSnapshot(first.runtime.pool, 'ETH', 3_000, new Date(Date.now() - 60_000));
  const runtime = await createRuntime(first.runtime.config, first.runtime.logger);
  let statements = 0;
  const counter: Interceptor = {
    name: 'statement-counter',
    beforeQueryExecution: () => {
      statements += 1;
      return null;
    },
  };
  const pool = await createDatabasePool(first.runtime.database.url, { interceptors: [counter] });
  const server = await serve(createDataService({ ...runtime, pool }).app);
  second = {
    runtime: {
      ...runtime,
      close: async () => {
        await pool.end();
        await runtime.close();
      },
    },
    server,
    statements: () => statements,
  };
  await eventually(() => second.runtime.changeEvents()!.isListening, 30_000, 'the listener');
});

afterAll(async () => {
  await second.server.close();
  await second.runtime.close();
  await first.close();
});

describe('the snapshot kept in memory', () => {
  test('between changes the answers cost no query, byte for byte the same', async () => {
    const warm = await all(second.server);
    expect(warm.status).toBe(200);
    const before = second.statements();
    for (let i = 0; i < 20; i += 1) {
      const again = await all(second.server);
      expect(again.text).toBe(warm.text);
    }
    // The token check may be read again once (it is believed for a second at a time).
    expect(second.statements() - before).toBeLessThanOrEqual(2);
    expect(warm.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(Object.keys(warm.body.currencies[0])).toEqual([
      'currencyName',
      'currencyCode',
      'value',
      'lastUpdated',
      'logoUrl',
      'open24h',
      'high24h',
      'low24h',
      'volume24h',
      'change24h',
    ]);
  });

  test('a harvest on the primary shows on the other instance after its event', async () => {
    expect(priceOf((await all(second.server)).body, 'BTC')).toBe(50_000);
    await first.runtime.pool.transaction((tx) =>
      recordHarvest(tx, {
        at: new Date(),
        prices: [{ code: 'BTC', price: 51_234.5, source: 'test' }],
        settleSeconds: 600,
      }),
    );
    await eventually(
      async () => priceOf((await all(second.server)).body, 'BTC') === 51_234.5,
      10_000,
      'the second instance to answer the new price',
    );
    // Both instances now answer the same bytes.
    expect((await all(first.server)).text).toBe((await all(second.server)).text);
  });

  test('a write of history changes the 24-hour figures everywhere', async () => {
    const before = (await all(second.server)).body.currencies.find(
      (c: { currencyCode: string }) => c.currencyCode === 'ETH',
    );
    expect(before.high24h).toBeNull();
    await insertCandles(first.runtime.pool, [
      { code: 'ETH', time: new Date(Date.now() - 2 * HOUR), open: 3_333 },
    ]);
    await eventually(
      async () =>
        (await all(second.server)).body.currencies.find(
          (c: { currencyCode: string }) => c.currencyCode === 'ETH',
        ).high24h === 3_333,
      10_000,
      'the new 24-hour high',
    );
  });

  test('`Cache-Control: no-cache` reflects every change committed before the request', async () => {
    for (const price of [40_001, 40_002, 40_003]) {
      await setSnapshot(first.runtime.pool, 'BTC', price, new Date());
      const answer = await all(second.server, { headers: { 'cache-control': 'no-cache' } });
      expect(priceOf(answer.body, 'BTC')).toBe(price);
    }
  });

  test('a change written while the notifications are cut off shows once they are back', async () => {
    expect(priceOf((await all(second.server)).body, 'BTC')).not.toBe(77_777);
    const listeners = () =>
      first.runtime.pool.anyFirst(sql.type(z.object({ pid: z.number() }))`
        SELECT pid FROM pg_stat_activity
        WHERE application_name = ${CHANGE_EVENTS_APPLICATION_NAME} AND datname = current_database()
      `);
    const cut = await listeners();
    expect(cut.length).toBe(2); // one per instance
    await first.runtime.pool.query(
      sql.unsafe`SELECT pg_terminate_backend(pid) FROM unnest(${sql.array(cut, 'int4')}) AS pid`,
    );
    // Its notification is lost: no instance listens at this moment.
    await setSnapshot(first.runtime.pool, 'BTC', 77_777, new Date());
    await eventually(
      async () =>
        (await listeners()).filter((pid) => !cut.includes(pid)).length === 2 &&
        second.runtime.changeEvents()!.isListening,
      30_000,
      'both instances to listen again',
    );
    // No request came while they were cut off: the list kept from before must not come back.
    expect(priceOf((await all(second.server)).body, 'BTC')).toBe(77_777);
  });

  test('readiness tells whether answers may come from memory', async () => {
    const ready = await getJson(`${second.server.url}/health/ready`);
    expect(ready.body.details.changeNotifications).toEqual({ listening: true });
  });

  test('limit and offset slice the same list', async () => {
    const whole = (await all(second.server)).body.currencies;
    const page = await getJson(
      `${second.server.url}/data/currency/all?limit=1&offset=1`,
      first.readToken,
    );
    expect(page.body.currencies).toEqual(whole.slice(1, 2));
    expect(page.text).toBe(JSON.stringify({ currencies: whole.slice(1, 2) }));
  });
});
