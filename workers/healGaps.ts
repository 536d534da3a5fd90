import type { Task } from 'graphile-worker';
import { dedicatedConnection } from '../src/data/ingest/connection.ts';
import { BinanceKlineClient } from '../src/data/ingest/exchange/binanceKlines.ts';
import { healAll, observedCodes } from '../src/data/ingest/heal/heal.ts';
import type { Runtime } from '../src/shared/runtime.ts';

export const HEAL_TASK = 'heal_gaps';

/** One gap-healing pass over every currency with observations (off when the look-back is 0). */
export function healGapsTask(runtime: Runtime): Task {
  return async () => {
    const hours = runtime.config.HEAL_LOOKBACK_HOURS;
    if (hours === 0) return;
    const client = new BinanceKlineClient({
      baseUrl: runtime.config.BINANCE_API_URL,
      timeoutMs: runtime.config.BACKFILL_HTTP_TIMEOUT_MS,
    });
    // A connection of its own per currency, like ingest jobs: the shared pool stays free.
    const connect = dedicatedConnection(runtime.config.DATABASE_URL);
    const results = await healAll(connect, client, await observedCodes(connect), {
      lookbackHours: hours,
    });
    const filled = results.reduce((sum, r) => sum + r.filled, 0);
    const knownGaps = results.reduce((sum, r) => sum + r.knownGaps, 0);
    runtime.logger.info({ filled, knownGaps, currencies: results.length }, 'gaps healed');
  };
}
