import { loadConfig, type Config } from '../../src/shared/config.ts';
import { migrate } from '../../src/shared/db/migrate.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { createRuntime, type Runtime } from '../../src/shared/runtime.ts';
import type { RollupMode } from '../../src/data/history/levels.ts';
import { startPgliteServer } from './pgliteServer.ts';
import { createTestRuntime } from './runtime.ts';

// The two rollup modes under test. `tables` runs on the machine's PostgreSQL with the Apache
// edition of TimescaleDB (as CI does); `continuous` runs on PGlite, PostgreSQL 17 in WebAssembly
// with TimescaleDB 2.23 including its TSL part, behind a wire-protocol server, so the same
// migrations, pools and queries run against real continuous aggregates.

export const MODES: RollupMode[] = ['tables', 'continuous'];

export interface ModeRuntime extends Runtime {
  mode: RollupMode;
  dispose(): Promise<void>;
}

export async function createModeRuntime(
  mode: RollupMode,
  env: Partial<Record<keyof Config, string>> = {},
): Promise<ModeRuntime> {
  if (mode === 'tables') {
    const runtime = await createTestRuntime(env);
    return { ...runtime, mode };
  }
  const server = await startPgliteServer();
  try {
    await migrate(server.url);
    const config = loadConfig({
      PLATFORM_LOAD_CURRENCIES: 'false',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      ...env,
      DATABASE_URL: server.url,
    });
    const runtime = await createRuntime(config, createLogger(config.LOG_LEVEL));
    return {
      ...runtime,
      mode,
      async dispose() {
        await runtime.close();
        await server.close();
      },
    };
  } catch (error) {
    await server.close();
    throw error;
  }
}
