import { setTimeout as sleep } from 'node:timers/promises';
import type { Runner } from 'graphile-worker';
import type { Logger } from '../shared/logger.ts';

/**
 * A runner whose stop() lets running jobs finish for at most `graceMs`, then fails the ones still
 * running (graphile-worker's kill), so they are retried by another worker at once instead of
 * staying locked until the lock expires hours later.
 */
export function withBoundedStop(runner: Runner, graceMs: number, logger: Logger): Runner {
  return {
    ...runner,
    async stop(reason?: string) {
      const stopping = runner.stop(reason);
      const finished = await Promise.race([
        stopping.then(() => true),
        sleep(graceMs, false, { ref: false }),
      ]);
      if (finished) return;
      logger.warn(
        { graceMs },
        'jobs still running after the shutdown grace; failing them for retry',
      );
      await runner.kill('shutdown grace exceeded');
      await stopping.catch(() => {});
    },
  };
}
