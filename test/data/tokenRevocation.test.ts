import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Interceptor } from 'slonik';
import { createDataService } from '../../src/data/service.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { createDatabasePool } from '../../src/shared/db/pool.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import { createRuntime, type Runtime } from '../../src/shared/runtime.ts';
import { runCli } from '../support/cli.ts';
import { startDataModule, type DataModuleHarness } from '../support/dataModule.ts';
import { getJson, serve } from '../support/http.ts';
import { eventually } from '../support/wait.ts';

// Token checks are kept per process; a revocation made anywhere (here: `platform token revoke`,
// a process of its own) reaches every instance within a second through its notification.

let first: DataModuleHarness;
let second: { runtime: Runtime; pool: { end(): Promise<void> }; server: RunningServer };
let statements = 0;

beforeAll(async () => {
  first = await startDataModule();
  const runtime = await createRuntime(first.runtime.config, first.runtime.logger);
  const counter: Interceptor = {
    name: 'statement-counter',
    beforeQueryExecution: () => {
      statements += 1;
      return null;
    },
  };
  const pool = await createDatabasePool(first.runtime.database.url, { interceptors: [counter] });
  second = { runtime, pool, server: await serve(createDataService({ ...runtime, pool }).app) };
  await eventually(() => runtime.changeEvents()!.isListening, 30_000, 'the listener');
});

afterAll(async () => {
  await second.server.close();
  await second.pool.end();
  await second.runtime.close();
  await first.close();
});

const status = async (server: { url: string }, token: string) =>
  (await getJson(`${server.url}/data/currency/all?limit=1`, token)).status;

describe('service tokens kept per process', () => {
  test('a verified token is not read from the database on every request', async () => {
    const { token } = await createToken(first.runtime.pool, 'busy', ['read']);
    expect(await status(second.server, token)).toBe(200);
    const before = statements;
    for (let i = 0; i < 20; i += 1) expect(await status(second.server, token)).toBe(200);
    // Twenty requests within about a second: the token is read again at most a couple of times.
    expect(statements - before).toBeLessThan(5);
  });

  test('a token revoked from the command line is refused by every instance within a second', async () => {
    const { token } = await createToken(first.runtime.pool, 'leaving', ['read']);
    expect(await status(first.server, token)).toBe(200);
    expect(await status(second.server, token)).toBe(200);
    const revoke = await runCli(['token', 'revoke', 'leaving'], {
      DATABASE_URL: first.runtime.database.url,
    });
    expect(revoke.code).toBe(0);
    const revokedAt = Date.now();
    await eventually(
      async () =>
        (await status(second.server, token)) === 401 && (await status(first.server, token)) === 401,
      5_000,
      'both instances to refuse the revoked token',
    );
    expect(Date.now() - revokedAt).toBeLessThan(1_000);
  });

  test('a token created a moment ago works at once, and an unknown one is never kept', async () => {
    expect(await status(second.server, 'pdt_unknown')).toBe(401);
    const { token } = await createToken(first.runtime.pool, 'newcomer', ['read']);
    expect(await status(second.server, token)).toBe(200);
  });

  test('scopes are checked on every request, kept token or not', async () => {
    const { token } = await createToken(first.runtime.pool, 'writer-only', ['write']);
    expect(await status(second.server, token)).toBe(403);
    expect(await status(second.server, token)).toBe(403);
  });
});
