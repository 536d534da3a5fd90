import type { Check, DoctorContext } from '../diagnostics.ts';
import { ReplicaMonitor } from './replicaMonitor.ts';

/**
 * Each replica of READ_DATABASE_URL for `platform doctor`: reachable, a streaming replica, and
 * its lag from WAL positions against REPLICA_MAX_LAG_SECONDS. Two probes a second apart, so a
 * replica busy replaying has a measured lag rather than a lower bound. Nothing without replicas.
 */
export async function checkReplicas({ config }: Pick<DoctorContext, 'config'>): Promise<Check[]> {
  const urls = config.READ_DATABASE_URL ?? [];
  if (urls.length === 0) return [];
  const monitor = new ReplicaMonitor(config.DATABASE_URL, urls, {
    maxLagSeconds: config.REPLICA_MAX_LAG_SECONDS,
    connectTimeoutMs: config.REPLICA_CONNECT_TIMEOUT_MS,
  });
  try {
    await monitor.probeNow();
    await new Promise((resolve) => setTimeout(resolve, 1000)); // the second sample, a second on
    await monitor.probeNow();
    return monitor.status().map((replica) => ({
      name: `replica ${replica.replica}`,
      ok: replica.inUse,
      detail: replica.inUse
        ? `streaming, ${replica.lagSeconds} s behind (${replica.lagBytes} bytes of WAL; limit ${config.REPLICA_MAX_LAG_SECONDS} s): reads go to it`
        : `left aside, the primary answers its reads: ${replica.reason}`,
      fix:
        'check that it runs and streams from DATABASE_URL (pg_stat_replication on the primary, ' +
        'pg_stat_wal_receiver and pg_is_wal_replay_paused() on the replica)',
    }));
  } finally {
    await monitor.close();
  }
}
