import type { Task } from 'graphile-worker';
import { dedicatedConnection } from '../src/data/ingest/connection.ts';
import {
  SIMULATED_HISTORY_TASK,
  simulatedHistoryPayload,
} from '../src/data/ingest/simulated/firstStart.ts';
import { loadSimulatedHistory } from '../src/data/ingest/simulated/simulatedHistory.ts';
import type { Runtime } from '../src/shared/runtime.ts';

export { SIMULATED_HISTORY_TASK };

/**
 * Loads the simulated market's past (queued by the first start, see firstStart.ts), the most
 * recent day first, one recorded unit per day: a retry or a restart resumes at the first day not
 * recorded. Progress goes to the log here and to `platform doctor`.
 */
export function simulatedHistoryTask(runtime: Runtime): Task {
  const connect = dedicatedConnection(runtime.config.DATABASE_URL);
  const log = runtime.logger.child({ task: SIMULATED_HISTORY_TASK });
  return async (payload) => {
    const job = simulatedHistoryPayload.parse(payload);
    const started = Date.now();
    log.info(
      { days: job.days, until: new Date(job.untilMs).toISOString() },
      'simulated history: loading in the background',
    );
    const results = await loadSimulatedHistory(connect, job, {
      onDay: (result, loaded, total) =>
        log.info(
          { day: result.label, inserted: result.inserted, path: result.path },
          `simulated history: ${loaded}/${total} days`,
        ),
    });
    const inserted = results.reduce((sum, r) => sum + r.inserted, 0);
    log.info(
      { days: job.days, inserted, seconds: Math.round((Date.now() - started) / 100) / 10 },
      'simulated history: loaded',
    );
  };
}
