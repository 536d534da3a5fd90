import { ConnectionError, type DatabasePool } from 'slonik';
import { abandonmentSignal } from '../abandonment.ts';
import { replicaFallbacks, routedReads } from '../metrics.ts';
import type { ReplicaMonitor, ReplicaStatus } from './replicaMonitor.ts';

// Where the replica-eligible reads go: history, candles, export and the signal read-backs. One
// read (a request's statements, from plan to rows) runs on one server, so that everything it
// keeps (history runs keyed by the revision it read) describes that server's state; a usable
// replica is taken in turn, the primary's pools otherwise. The snapshot is not among them: it is
// built once per change heard, on the primary, where that change is surely committed. A replica
// that fails a read the way an unreachable server does is left aside and the primary answers the
// same read.

/** The two pools of one server, as the primary has them (see Runtime). */
export interface ServerPools {
  /** Quick reads: the signal read-backs. */
  pool: DatabasePool;
  /** Expensive reads: history, candles, export (behind the admission gates). */
  readPool: DatabasePool;
}

/**
 * A replica and how to open its pools. They are opened on its first read, not at start-up:
 * opening one reads the server's types, and a replica that is down (or has not replayed the
 * database's creation yet) must not stop a process from starting.
 */
export interface Replica {
  name: string;
  open: () => Promise<ServerPools>;
}

/** Opens a replica's pools once; a failed opening is tried again on a later read. */
class ReplicaPools {
  readonly name: string;
  private readonly open: () => Promise<ServerPools>;
  private opened: Promise<ServerPools> | undefined;

  constructor(replica: Replica) {
    this.name = replica.name;
    this.open = replica.open;
  }

  pools(): Promise<ServerPools> {
    if (!this.opened) {
      const opening = this.open();
      opening.catch(() => {
        if (this.opened === opening) this.opened = undefined;
      });
      this.opened = opening;
    }
    return this.opened;
  }

  async end() {
    const pools = await this.opened?.catch(() => undefined);
    if (pools) await Promise.allSettled([pools.pool.end(), pools.readPool.end()]);
  }
}

/** PostgreSQL error codes a replica answers with when it cannot serve reads now. */
const REPLICA_UNAVAILABLE = new Set([
  '57P01', // admin shutdown
  '57P02', // crash shutdown
  '57P03', // cannot connect now (starting, in recovery without hot standby)
  '57P04', // database dropped (its replay ended the session)
  '3D000', // the database is not there (yet): its creation is not replayed
  '53300', // too many connections
  '40001', // a query cancelled by a conflict with recovery (a replica is read-only otherwise)
  '40P01', // the same, for a deadlock with the startup process
]);

const NETWORK_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EPIPE',
]);

/** Whether an error says the server could not serve the read, rather than that the read is wrong. */
export function isServerUnavailable(error: unknown): boolean {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined; e; e = e.cause as never) {
    if (e instanceof ConnectionError) return true;
    const code = typeof e.code === 'string' ? e.code : '';
    if (REPLICA_UNAVAILABLE.has(code) || NETWORK_ERRORS.has(code) || code.startsWith('08')) {
      return true;
    }
    if (/Connection terminated|connection timeout/i.test(String((e as Error).message))) return true;
  }
  return false;
}

export class ReadRouter {
  private readonly primary: ServerPools;
  private readonly replicas: ReplicaPools[];
  private readonly monitor: ReplicaMonitor | undefined;
  private turn = 0;

  constructor(primary: ServerPools, replicas: Replica[] = [], monitor?: ReplicaMonitor) {
    this.primary = primary;
    this.replicas = replicas.map((replica) => new ReplicaPools(replica));
    this.monitor = monitor;
    // Each replica's fallback count exists from the start, at 0: increase() over a series that
    // first appears at its first fallback would not count that one.
    for (const replica of this.replicas) replicaFallbacks.inc({ replica: replica.name }, 0);
  }

  /** Whether any replica is configured (READ_DATABASE_URL). */
  get hasReplicas(): boolean {
    return this.replicas.length > 0;
  }

  /**
   * Runs an expensive read (history, candles, export) with every statement on one server: a
   * usable replica, else the primary's read pool. `read` may run twice (on the primary after a
   * replica failed): it must only read.
   */
  expensive<T>(read: (db: DatabasePool) => Promise<T>): Promise<T> {
    return this.route(read, 'readPool');
  }

  /**
   * Runs a quick read (the signal read-backs) the same way, on a replica's or the
   * primary's main pool: expensive reads never hold its connections.
   */
  quick<T>(read: (db: DatabasePool) => Promise<T>): Promise<T> {
    return this.route(read, 'pool');
  }

  private async route<T>(
    read: (db: DatabasePool) => Promise<T>,
    kind: keyof ServerPools,
  ): Promise<T> {
    const replica = this.pickReplica();
    if (!replica) {
      routedReads.inc({ server: 'primary' });
      return read(this.primary[kind]);
    }
    routedReads.inc({ server: replica.name });
    try {
      return await read((await replica.pools())[kind]);
    } catch (error) {
      // An abandoned request's connection is destroyed on purpose: nothing to answer any more.
      if (abandonmentSignal()?.aborted || !isServerUnavailable(error)) throw error;
      this.monitor?.leaveAside(replica.name, `a read failed: ${(error as Error).message}`);
      replicaFallbacks.inc({ replica: replica.name });
      routedReads.inc({ server: 'primary' });
      return read(this.primary[kind]);
    }
  }

  /** Each replica's lag and whether reads go to it (empty without READ_DATABASE_URL). */
  status(): ReplicaStatus[] {
    this.monitor?.start();
    return this.monitor?.status() ?? [];
  }

  /** Measures every replica's lag now (tests, the doctor). */
  async probeNow(): Promise<ReplicaStatus[]> {
    await this.monitor?.probeNow();
    return this.status();
  }

  async close(): Promise<void> {
    await this.monitor?.close();
    await Promise.allSettled(this.replicas.map((replica) => replica.end()));
  }

  private pickReplica(): ReplicaPools | undefined {
    if (!this.monitor) return undefined;
    this.monitor.start();
    const usable = new Set(this.monitor.usable());
    const candidates = this.replicas.filter((replica) => usable.has(replica.name));
    if (candidates.length === 0) return undefined;
    this.turn = (this.turn + 1) % candidates.length;
    return candidates[this.turn];
  }
}
