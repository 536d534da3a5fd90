import { loadConfig, type Config } from '../../src/shared/config.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { createRuntime, type Runtime } from '../../src/shared/runtime.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';

export interface TestRuntime extends Runtime {
  database: TestDatabase;
  /** Closes the pools and drops the database. */
  dispose(): Promise<void>;
}

/** A runtime on a fresh cloned database, silent unless TEST_LOG_LEVEL says otherwise. */
export async function createTestRuntime(
  env: Partial<Record<keyof Config, string>> = {},
): Promise<TestRuntime> {
  const database = await createTestDatabase();
  const config = loadConfig({
    PLATFORM_LOAD_CURRENCIES: 'false',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...env,
    DATABASE_URL: database.url,
  });
  const runtime = await createRuntime(config, createLogger(config.LOG_LEVEL));
  return {
    ...runtime,
    database,
    async dispose() {
      await runtime.close();
      await database.drop();
    },
  };
}
