import pg from 'pg';
import { replicaInUse, replicaLagBytes, replicaLagSeconds } from '../metrics.ts';

// How far each physical streaming replica is behind the primary, measured from WAL positions:
// the primary's pg_current_wal_lsn() is sampled on every probe, and a replica whose replay
// position pg_last_wal_replay_lsn() has reached a sample holds everything the primary had when
// that sample was taken. Its lag is the age of the newest sample it has reached (0 when it has
// reached the latest), which stays right when the primary is idle: no new WAL, nothing missing,
// no lag, where the age of the last replayed transaction would grow without end.

/** A replica's state as the last probe found it (shown in /health/ready and `platform doctor`). */
export interface ReplicaStatus {
  /** host:port/database, without credentials. */
  replica: string;
  reachable: boolean;
  /** Seconds of primary history it has not replayed yet (null: unknown). */
  lagSeconds: number | null;
  /** Bytes of WAL the primary has written and it has not replayed yet (null: unknown). */
  lagBytes: number | null;
  /** Whether reads go to it now. */
  inUse: boolean;
  /** Why it is left aside, when it is. */
  reason?: string;
}

/** The primary's WAL position (bytes) as read at `at` (epoch ms, when the read was sent). */
export interface Sample {
  at: number;
  lsn: bigint;
}

/**
 * How far behind a replica that replayed up to `replayed` is: 0 when it reached the latest
 * sample, else the age of the newest sample it reached. When it reached none of the kept ones
 * (it is further behind than they go back, or the probing just began), the age of the oldest is
 * only a lower bound: `exact` is false. `samples` ascending, ending with `latest`.
 */
export function secondsBehind(
  samples: readonly Sample[],
  replayed: bigint,
  latest: Sample,
): { seconds: number; exact: boolean } {
  if (replayed >= latest.lsn) return { seconds: 0, exact: true };
  let reachedAt: number | undefined;
  for (const sample of samples) if (sample.lsn <= replayed) reachedAt = sample.at;
  const since = reachedAt ?? samples[0]?.at ?? latest.at;
  return { seconds: Math.round((latest.at - since) / 100) / 10, exact: reachedAt !== undefined };
}

interface ReplicaState {
  name: string;
  probe: pg.Pool;
  reachable: boolean;
  lagSeconds: number | null;
  lagBytes: number | null;
  /** False while lagSeconds is only a lower bound (see secondsBehind). */
  lagExact: boolean;
  /** When this state was measured (epoch ms; 0: never). */
  measuredAt: number;
  reason: string | undefined;
}

export interface MonitorOptions {
  maxLagSeconds: number;
  connectTimeoutMs: number;
  /** Between two probes (default: a second, or half the lag limit when that is shorter). */
  intervalMs?: number;
}

/** A connection string's host:port/database, for labels and reports. */
export function replicaName(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
}

/** A WAL position ('16/B374D848') as a number of bytes. */
export function lsnBytes(lsn: string): bigint {
  const [high, low] = lsn.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

/** Probes the primary and every replica once per interval, while anything reads through it. */
export class ReplicaMonitor {
  private readonly primary: pg.Pool;
  private readonly states: ReplicaState[];
  private readonly samples: Sample[] = [];
  private readonly maxLagSeconds: number;
  private readonly intervalMs: number;
  private readonly queryTimeoutMs: number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private started = false;
  private closed = false;

  constructor(primaryUrl: string, replicaUrls: readonly string[], options: MonitorOptions) {
    this.maxLagSeconds = options.maxLagSeconds;
    this.intervalMs =
      options.intervalMs ?? Math.max(100, Math.min(1000, (options.maxLagSeconds * 1000) / 2));
    // A probe never hangs: a replica that does not answer within this is unreachable.
    this.queryTimeoutMs = Math.max(1000, options.connectTimeoutMs);
    this.primary = probePool(primaryUrl, options.connectTimeoutMs, this.queryTimeoutMs);
    this.states = replicaUrls.map((url) => ({
      name: replicaName(url),
      probe: probePool(url, options.connectTimeoutMs, this.queryTimeoutMs),
      reachable: false,
      lagSeconds: null,
      lagBytes: null,
      lagExact: false,
      measuredAt: 0,
      reason: 'not measured yet',
    }));
  }

  /** Starts probing (once); reads go to the primary until a replica is measured close enough. */
  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    this.schedule(0);
  }

  /** Names of the replicas reads may go to now. */
  usable(): string[] {
    const now = Date.now();
    return this.states.filter((state) => this.isUsable(state, now)).map((state) => state.name);
  }

  /** A read on this replica failed as only an unreachable server fails: aside until it probes well. */
  leaveAside(name: string, reason: string): void {
    const state = this.states.find((s) => s.name === name);
    if (!state) return;
    state.reachable = false;
    state.reason = reason;
    replicaInUse.set({ replica: name }, 0);
  }

  status(): ReplicaStatus[] {
    const now = Date.now();
    return this.states.map((state) => {
      const inUse = this.isUsable(state, now);
      return {
        replica: state.name,
        reachable: state.reachable,
        lagSeconds: state.lagSeconds,
        lagBytes: state.lagBytes,
        inUse,
        ...(inUse ? {} : { reason: this.asideReason(state, now) }),
      };
    });
  }

  /** Runs one probe now (the doctor's measurement; tests waiting for a state). */
  async probeNow(): Promise<void> {
    if (this.running) await this.running;
    this.running = this.probe().finally(() => (this.running = undefined));
    await this.running;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    if (this.running) await this.running.catch(() => {});
    await Promise.allSettled([this.primary.end(), ...this.states.map((s) => s.probe.end())]);
  }

  private schedule(delayMs: number) {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      void this.probeNow().finally(() => this.schedule(this.intervalMs));
    }, delayMs);
    // Probing never keeps a process alive on its own.
    this.timer.unref();
  }

  private isUsable(state: ReplicaState, now: number): boolean {
    return (
      state.reachable &&
      state.lagSeconds !== null &&
      state.lagExact &&
      state.lagSeconds <= this.maxLagSeconds &&
      // A measurement older than the limit says nothing about the lag now.
      now - state.measuredAt <= this.maxLagSeconds * 1000 + 3 * this.intervalMs
    );
  }

  private asideReason(state: ReplicaState, now: number): string {
    if (!state.reachable || state.lagSeconds === null) return state.reason ?? 'unreachable';
    if (!state.lagExact) return `at least ${state.lagSeconds} s behind (still measuring)`;
    if (state.lagSeconds > this.maxLagSeconds) {
      return `${state.lagSeconds} s behind (limit ${this.maxLagSeconds} s)`;
    }
    return `not measured for ${Math.round((now - state.measuredAt) / 1000)} s`;
  }

  private async probe(): Promise<void> {
    const sample = await this.samplePrimary();
    await Promise.all(this.states.map((state) => this.probeReplica(state, sample)));
  }

  /** The primary's WAL position now, kept for as long as a lag beyond the limit needs it. */
  private async samplePrimary(): Promise<Sample | undefined> {
    const at = Date.now();
    try {
      const lsn = await queryOne(this.primary, 'SELECT pg_current_wal_lsn()::text AS lsn');
      const sample = { at, lsn: lsnBytes(String(lsn.lsn)) };
      this.samples.push(sample);
      const keepMs = Math.max(60_000, this.maxLagSeconds * 3000);
      while (this.samples.length > 1 && this.samples[0]!.at < at - keepMs) this.samples.shift();
      return sample;
    } catch {
      return undefined;
    }
  }

  private async probeReplica(state: ReplicaState, latest: Sample | undefined): Promise<void> {
    try {
      const row = await queryOne(
        state.probe,
        `SELECT pg_is_in_recovery() AS replica,
                coalesce(pg_last_wal_replay_lsn(), '0/0')::text AS replayed`,
      );
      if (!row.replica) throw new Error('not a streaming replica (not in recovery)');
      if (!latest) throw new Error('the primary did not answer: lag unknown');
      const replayed = lsnBytes(String(row.replayed));
      state.lagBytes = latest.lsn > replayed ? Number(latest.lsn - replayed) : 0;
      const behind = secondsBehind(this.samples, replayed, latest);
      state.lagSeconds = behind.seconds;
      state.lagExact = behind.exact;
      state.reachable = true;
      state.reason = undefined;
      state.measuredAt = latest.at;
    } catch (error) {
      state.reachable = false;
      state.lagSeconds = null;
      state.lagBytes = null;
      state.reason = (error as Error).message;
    }
    this.report(state);
  }

  private report(state: ReplicaState) {
    const labels = { replica: state.name };
    replicaInUse.set(labels, this.isUsable(state, Date.now()) ? 1 : 0);
    if (state.lagSeconds === null) {
      replicaLagSeconds.remove(labels);
      replicaLagBytes.remove(labels);
    } else {
      replicaLagSeconds.set(labels, state.lagSeconds);
      replicaLagBytes.set(labels, state.lagBytes ?? 0);
    }
  }
}

function probePool(url: string, connectTimeoutMs: number, queryTimeoutMs: number): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: 1,
    connectionTimeoutMillis: connectTimeoutMs,
    query_timeout: queryTimeoutMs,
    keepAlive: true,
    application_name: 'platform replica probe',
  });
  // A replica going down (restart, failover) ends its sessions with a FATAL error. On an idle
  // client the pool's own listener catches it; on a checked-out one (queryOne) it can arrive
  // after the query's answer and before its release, read in the same chunk, where a client
  // with no listener of its own would crash the process. The failed probe is counted anyway.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/** One row, on a connection thrown away when anything fails (it may be stuck mid-query). */
async function queryOne(pool: pg.Pool, text: string): Promise<Record<string, unknown>> {
  const client = await pool.connect();
  try {
    const result = await client.query(text);
    client.release();
    return result.rows[0] as Record<string, unknown>;
  } catch (error) {
    client.release(true);
    throw error;
  }
}
