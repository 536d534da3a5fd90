import type { Task } from 'graphile-worker';
import { reorderClosedChunks } from '../src/data/history/reorderChunks.ts';
import type { Runtime } from '../src/shared/runtime.ts';

export const REORDER_TASK = 'reorder_chunks';

/**
 * Puts the rows of newly closed chunks in (currency_code, time) order, a few per run, so one
 * currency's history reads contiguous pages (src/data/history/reorderChunks.ts).
 */
export function reorderChunksTask(runtime: Runtime): Task {
  return async () => {
    const result = await reorderClosedChunks(runtime.pool);
    if (result.reordered.length > 0 || result.busy.length > 0)
      runtime.logger.info({ ...result }, 'chunks reordered');
  };
}
