import type { Task } from 'graphile-worker';
import { dedicatedConnection } from '../src/data/ingest/connection.ts';
import { historySources } from '../src/data/ingest/exchange/sources.ts';
import { healAll, observedCodes } from '../src/data/ingest/heal/heal.ts';
import type { Runtime } from '../src/shared/runtime.ts';

export const HEAL_TASK = 'heal_gaps';

/** One gap-healing pass over every currency with observations (off when the look-back is 0). */
export function healGapsTask(runtime: Runtime): Task {
  return async () => {
    const hours = runtime.config.HEAL_LOOKBACK_HOURS;
    if (hours === 0) return;
    const sources = historySources(runtime.config);
    // A connection of its own per currency, like ingest jobs: the shared pool stays free.
    const connect = dedicatedConnection(runtime.config.DATABASE_URL);
    const results = await healAll(connect, sources, await observedCodes(connect), {
      lookbackHours: hours,
    });
    const filled = results.reduce((sum, r) => sum + r.filled, 0);
    const knownGaps = results.reduce((sum, r) => sum + r.knownGaps, 0);
    const errors = results.flatMap((r) => r.errors.map((e) => `${r.code}: ${e}`));
    runtime.logger.info({ filled, knownGaps, currencies: results.length }, 'gaps healed');
    // Minutes an exchange failed on stay open and are asked for again by the next pass.
    if (errors.length > 0)
      runtime.logger.warn({ errors: errors.slice(0, 20) }, 'heal: exchange failures');
  };
}
