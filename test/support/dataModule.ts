import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { createDataService } from '../../src/data/service.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import type { Config } from '../../src/shared/config.ts';
import { createDatabasePool } from '../../src/shared/db/pool.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import type { Interceptor } from 'slonik';
import { serve } from './http.ts';
import { createTestRuntime, listeningForChanges, type TestRuntime } from './runtime.ts';

export interface DataModuleHarness {
  runtime: TestRuntime;
  server: RunningServer;
  /** A token with the read scope only. */
  readToken: string;
  /** A token with the write scope only. */
  writeToken: string;
  close(): Promise<void>;
}

/** The data module on a fresh database holding the shipped currencies, with one token per scope. */
export async function startDataModule(
  env: Partial<Record<keyof Config, string>> = {},
): Promise<DataModuleHarness> {
  const runtime = await createTestRuntime(env);
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  const readToken = (await createToken(runtime.pool, 'reader', ['read'])).token;
  const writeToken = (await createToken(runtime.pool, 'writer', ['write'])).token;
  const server = await serve(createDataService(runtime).app);
  await listeningForChanges(runtime);
  return {
    runtime,
    server,
    readToken,
    writeToken,
    async close() {
      await server.close();
      await runtime.dispose();
    },
  };
}

export interface CountingDataModule {
  url: string;
  /** How many statements its pool has sent so far. */
  statements(): number;
  close(): Promise<void>;
}

/**
 * A second data module on `runtime`'s database whose pool, like the platform's, counts the
 * statements it sends: to check that a bulk request costs a fixed number of round trips.
 */
export async function startCountingDataModule(runtime: TestRuntime): Promise<CountingDataModule> {
  let statements = 0;
  const counter: Interceptor = {
    name: 'statement-counter',
    beforeQueryExecution: () => {
      statements += 1;
      return null;
    },
  };
  const pool = await createDatabasePool(runtime.database.url, { interceptors: [counter] });
  const server = await serve(createDataService({ ...runtime, pool }).app);
  return {
    url: server.url,
    statements: () => statements,
    async close() {
      await server.close();
      await pool.end();
    },
  };
}
