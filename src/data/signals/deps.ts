import type { DatabasePool } from 'slonik';
import type { ScopeGuard } from '../auth.ts';
import type { BulkLimits } from './bulkBody.ts';

/** What the signal-input routes need from the data module. */
export interface SignalRouteDeps {
  pool: DatabasePool;
  requireScope: ScopeGuard;
  /** Most buckets one bucketed answer may hold (HISTORY_MAX_POINTS). */
  maxPoints: number;
  bulk: BulkLimits;
}
