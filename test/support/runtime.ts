import { pino } from 'pino';
import { loadConfig, type Config } from '../../src/shared/config.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { createRuntime, type Runtime } from '../../src/shared/runtime.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';
import { eventually } from './wait.ts';

export interface TestRuntime extends Runtime {
  database: TestDatabase;
  /** Closes the pools and drops the database. */
  dispose(): Promise<void>;
}

/**
 * Where the runtimes' logs go: with TEST_LOG_FILE, every runtime logs at debug level (or
 * TEST_LOG_LEVEL) as JSON lines appended to that file, so the logs of a whole run can be scanned
 * for secrets (test/security/logScan.test.ts, and the global teardown).
 */
function testLogger(level: string) {
  const file = process.env.TEST_LOG_FILE;
  if (!file) return createLogger(level);
  const explicit = process.env.TEST_LOG_LEVEL;
  return createLogger(
    explicit && explicit !== 'silent' ? explicit : 'debug',
    pino.destination({ dest: file, append: true, sync: true }),
    'json',
  );
}

/** A runtime on a fresh cloned database, silent unless TEST_LOG_LEVEL (or TEST_LOG_FILE) says otherwise. */
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
  const runtime = await createRuntime(config, testLogger(config.LOG_LEVEL));
  return {
    ...runtime,
    database,
    async dispose() {
      await runtime.close();
      await database.drop();
    },
  };
}

/**
 * Waits until the runtime hears change notifications: what the services keep in memory (the
 * snapshot, verified tokens) is kept only from then on, so a test's warm-up request made after
 * this already fills what later requests reuse.
 */
export async function listeningForChanges(runtime: Runtime): Promise<void> {
  await eventually(
    () => runtime.changeEvents()?.isListening ?? true,
    30_000,
    'the change notifications to be heard',
  );
}
