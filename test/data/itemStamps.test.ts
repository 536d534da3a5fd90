import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { sql } from 'slonik';
import { z } from 'zod';
import { refreshRollups } from '../../src/data/history/refresh.ts';
import { createDataService } from '../../src/data/service.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { loadConfig } from '../../src/shared/config.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { createRuntime, type Runtime } from '../../src/shared/runtime.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import { createTestDatabase, withAdmin, type TestDatabase } from '../support/database.ts';
import { getJson, serve } from '../support/http.ts';
import { insertCandles } from '../support/prices.ts';

// JSON answers write bucket stamps in SQL (src/data/history/jsonText.ts): from the timestamp's
// own text on grids of whole seconds, which depends on the session's DateStyle, and with
// to_char where an origin puts stamps between seconds. Both must read as toISOString() writes
// them, whatever DateStyle the server, database or role is configured with: here the database
// defaults to the SQL style, and the platform's sessions must pin ISO for themselves.

const MIN = 60_000;

describe('bucket stamps of JSON answers under a database configured with another DateStyle', () => {
  let database: TestDatabase;
  let runtime: Runtime;
  let server: RunningServer;
  let token: string;
  // Ten minutes of candles, ending a few minutes ago (the contract's history window ends now).
  const first = Math.floor(Date.now() / MIN) * MIN - 15 * MIN;
  const times = Array.from({ length: 10 }, (_, i) => first + i * MIN + 7_000);

  beforeAll(async () => {
    database = await createTestDatabase();
    await withAdmin((client) =>
      client.query(
        `ALTER DATABASE ${pg.escapeIdentifier(database.name)} SET DateStyle = 'SQL, DMY'`,
      ),
    );
    const config = loadConfig({
      PLATFORM_LOAD_CURRENCIES: 'false',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      DATABASE_URL: database.url,
    });
    runtime = await createRuntime(config, createLogger(config.LOG_LEVEL));
    await runtime.pool.query(
      sql.unsafe`INSERT INTO currencies (code, name) VALUES ('STMP', 'Stamps')`,
    );
    await insertCandles(
      runtime.pool,
      times.map((time, i) => ({ code: 'STMP', time: new Date(time), open: 10 + i })),
    );
    await refreshRollups(runtime.pool, { settleSeconds: 0 });
    token = (await createToken(runtime.pool, 'stamps', ['read'])).token;
    server = await serve(createDataService(runtime).app);
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    await runtime?.close();
    await database?.drop();
  });

  const stamps = (body: Array<{ timestamp: string }>) => body.map((item) => item.timestamp);
  const window = `from=${new Date(first).toISOString()}&to=${new Date(first + 10 * MIN).toISOString()}`;

  test('the sessions pin the ISO style over the database default', async () => {
    const style = await runtime.pool.oneFirst(
      sql.type(z.object({ style: z.string() }))`SELECT current_setting('DateStyle') AS style`,
    );
    expect(style).toBe('ISO, DMY');
  });

  test('whole-second grids: candles and the contract history', async () => {
    const expected = times.map((time) => new Date(Math.floor(time / MIN) * MIN).toISOString());
    const candles = await getJson(`${server.url}/data/candles/STMP?${window}&interval=1m`, token);
    expect(candles.status).toBe(200);
    expect(stamps(candles.body)).toEqual(expected);
    const history = await getJson(
      `${server.url}/data/currency/history/STMP?hours=1&intervalSeconds=60`,
      token,
    );
    expect(history.status).toBe(200);
    expect(stamps(history.body)).toEqual(expected);
    expect(history.body.map((item: { value: number }) => item.value)).toEqual(
      times.map((_, i) => 10 + i),
    );
  });

  test('an origin with milliseconds puts stamps between seconds (to_char)', async () => {
    const origin = '2024-01-01T00:00:00.250Z';
    const candles = await getJson(
      `${server.url}/data/candles/STMP?${window}&interval=1m&origin=${origin}`,
      token,
    );
    expect(candles.status).toBe(200);
    // Buckets start 250 ms past each minute; each candle lies 7 s into its minute.
    const expected = times.map((time) => new Date(time - 7_000 + 250).toISOString());
    expect(stamps(candles.body)).toEqual(expected);
    expect(expected[0]).toMatch(/:00\.250Z$/);
  });
});
