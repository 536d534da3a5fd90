import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Logger } from '../shared/logger.ts';
import { counter, gauge } from '../shared/metrics.ts';
import { SESSION_OPTIONS } from '../shared/db/sessionSettings.ts';

// A sub-minute scheduler that runs once across many processes. Every process runs a ticker; the
// tickers of one name compete for a PostgreSQL session advisory lock on a connection of their
// own, and the holder (the leader) calls onTick at the start of every slot (slot = floor(now /
// interval), aligned to the Unix epoch, so a restarted leader keeps the same grid). When the
// leader dies its connection closes, the lock goes with it, and a follower takes the lead at its
// next try (within `followerRetryMs`). What the tick does must itself be idempotent per slot: a
// leader cut off from the database may tick once more before it learns it lost the lead.

/** First key of every ticker's advisory lock: the platform's namespace for tickers. */
export const TICKER_LOCK_CLASS = 727_100;
/** Ticker connections name themselves `ticker:<name>` (see `platform doctor`). */
export const TICKER_APPLICATION_PREFIX = 'ticker:';
// A leader whose network vanished leaves an idle session behind; the server ends it after this,
// releasing the lock, where TCP keep-alive alone could take hours.
const IDLE_SESSION_TIMEOUT_MS = 30_000;

const leaderGauge = gauge('ticker_leader', '1 while this process leads the ticker.', ['ticker']);
const tickCount = counter('ticker_ticks_total', 'Slots this process ticked as leader.', [
  'ticker',
  'outcome',
]);

export interface Slot {
  /** floor(start / interval) */
  index: number;
  start: Date;
  intervalMs: number;
}

export interface TickerOptions {
  /** Tickers with the same name, in any process on the database, elect one leader. */
  name: string;
  intervalMs: number;
  connectionString: string;
  logger: Logger;
  /** Called by the leader once per slot, at the slot's start (or when it takes the lead). */
  onTick(slot: Slot): Promise<void>;
  /** How often a follower tries to take the lead. */
  followerRetryMs?: number;
  /** Longest time the leader goes without checking its connection (and so its lock). */
  heartbeatMs?: number;
}

export interface Ticker {
  readonly name: string;
  isLeader(): boolean;
  /** Stops ticking and releases the lead (its connection closes). */
  stop(): Promise<void>;
}

export function startTicker(options: TickerOptions): Ticker {
  const followerRetryMs = options.followerRetryMs ?? 1000;
  const heartbeatMs = options.heartbeatMs ?? 5000;
  const log = options.logger.child({ component: 'ticker', ticker: options.name });
  const lockKey = hashName(options.name);
  const stopping = new AbortController();
  let client: pg.Client | null = null;
  let leader = false;
  let lastSlot = -Infinity;

  const setLeader = (value: boolean) => {
    if (leader !== value) log.info(value ? 'took the lead' : 'left the lead');
    leader = value;
    leaderGauge.set({ ticker: options.name }, value ? 1 : 0);
  };

  const disconnect = async () => {
    setLeader(false);
    const closing = client;
    client = null;
    await closing?.end().catch(() => {});
  };

  const connect = async (): Promise<pg.Client> => {
    const fresh = new pg.Client({
      connectionString: options.connectionString,
      application_name: `${TICKER_APPLICATION_PREFIX}${options.name}`,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      options: SESSION_OPTIONS,
      connectionTimeoutMillis: 5_000,
      // A heartbeat that hangs (a silent network) must fail, so a cut-off leader steps down.
      query_timeout: 10_000,
    });
    // A dropped connection surfaces here and, for the leader, on its next query.
    fresh.on('error', (error) => {
      log.warn({ err: error.message }, 'ticker connection failed');
      if (client === fresh) void disconnect();
    });
    try {
      await fresh.connect();
      await fresh.query(`SET idle_session_timeout = ${IDLE_SESSION_TIMEOUT_MS}`);
      return fresh;
    } catch (error) {
      await fresh.end().catch(() => {});
      throw error;
    }
  };

  const tick = async (index: number) => {
    const slot = {
      index,
      start: new Date(index * options.intervalMs),
      intervalMs: options.intervalMs,
    };
    try {
      await options.onTick(slot);
      tickCount.inc({ ticker: options.name, outcome: 'ok' });
    } catch (error) {
      tickCount.inc({ ticker: options.name, outcome: 'error' });
      log.warn({ err: errorMessage(error), slot: slot.start.toISOString() }, 'tick failed');
    }
  };

  const step = async () => {
    client ??= await connect();
    if (leader) {
      await client.query('SELECT 1'); // the session lives, so the lock is still ours
    } else {
      const { rows } = await client.query<{ locked: boolean }>(
        'SELECT pg_try_advisory_lock($1, $2) AS locked',
        [TICKER_LOCK_CLASS, lockKey],
      );
      setLeader(rows[0]?.locked === true);
      if (!leader) {
        await sleep(followerRetryMs, undefined, { signal: stopping.signal });
        return;
      }
    }
    const current = Math.floor(Date.now() / options.intervalMs);
    if (current > lastSlot) {
      lastSlot = current;
      await tick(current);
    }
    const untilNext = (lastSlot + 1) * options.intervalMs - Date.now();
    await sleep(Math.max(0, Math.min(untilNext, heartbeatMs)), undefined, {
      signal: stopping.signal,
    });
  };

  const loop = (async () => {
    while (!stopping.signal.aborted) {
      try {
        await step();
      } catch (error) {
        if (stopping.signal.aborted) break;
        log.warn({ err: errorMessage(error) }, 'ticker lost its database connection; retrying');
        await disconnect();
        await sleep(followerRetryMs, undefined, { signal: stopping.signal }).catch(() => {});
      }
    }
    await disconnect();
  })();

  return {
    name: options.name,
    isLeader: () => leader,
    async stop() {
      stopping.abort();
      await loop;
    },
  };
}

/** The name's 32-bit FNV-1a hash as a signed int, the advisory lock's second key. */
function hashName(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h | 0;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
