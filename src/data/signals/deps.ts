import type { DatabasePool } from 'slonik';
import type { ReadRouter } from '../../shared/db/readRouter.ts';
import type { ScopeGuard } from '../auth.ts';
import type { BulkLimits } from './bulkBody.ts';

/** What the signal-input routes need from the data module. */
export interface SignalRouteDeps {
  /** Writes (and their idempotency keys): the primary. */
  pool: DatabasePool;
  /** The read-backs: a replica close enough to the primary, else the primary. */
  reads: ReadRouter;
  requireScope: ScopeGuard;
  /** Most buckets one bucketed answer may hold (HISTORY_MAX_POINTS). */
  maxPoints: number;
  bulk: BulkLimits;
}
