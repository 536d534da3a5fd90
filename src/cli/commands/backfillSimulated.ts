import { dedicatedConnection } from '../../data/ingest/connection.ts';
import {
  enqueueSimulatedHistory,
  SIMULATED_HISTORY_TASK,
} from '../../data/ingest/simulated/firstStart.ts';
import { loadSimulatedHistory } from '../../data/ingest/simulated/simulatedHistory.ts';
import { SummaryCollector, type BackfillSummary } from '../../data/ingest/summary.ts';
import type { Config } from '../../shared/config.ts';
import { createProgress } from '../progress.ts';
import { reportEnqueued, withPool, type BackfillOptions } from './backfillCommon.ts';

export { simulatedOnly } from '../../data/ingest/simulated/firstStart.ts';

/**
 * The simulated market's past, the same days a first start loads (see
 * src/data/ingest/simulated/): existing rows win, so over stored prices it only fills gaps.
 */
export async function backfillSimulated(
  config: Config,
  options: BackfillOptions,
): Promise<BackfillSummary | null> {
  const request = {
    seed: config.MARKET_SIMULATED_SEED,
    untilMs: Date.now(),
    days: options.days ?? 30,
    ...(options.code ? { codes: [options.code.toUpperCase()] } : {}),
  };
  if (options.enqueue) {
    const key = `${SIMULATED_HISTORY_TASK}:${Math.floor(request.untilMs / 60_000)}:${options.code ?? '*'}`;
    await withPool(config, (pool) => enqueueSimulatedHistory(pool, request, key));
    reportEnqueued(1, 'simulated history', options.json);
    return null;
  }
  const progress = createProgress(request.days, { quiet: !!options.json });
  const collector = new SummaryCollector();
  try {
    const results = await loadSimulatedHistory(dedicatedConnection(config.DATABASE_URL), request, {
      force: !!options.force,
      onDay: (result) => progress.advance(1, result.read),
    });
    for (const result of results) collector.add(result);
  } finally {
    progress.stop();
  }
  return collector.result();
}
