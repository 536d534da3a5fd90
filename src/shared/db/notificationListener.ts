import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Logger } from '../logger.ts';
import { SESSION_OPTIONS } from './sessionSettings.ts';

export interface NotificationListenerOptions {
  databaseUrl: string;
  /** application_name of the connection (what `pg_stat_activity` shows). */
  applicationName: string;
  channels: readonly string[];
  logger: Logger;
  onNotification: (channel: string, payload: string) => void;
  /**
   * Called after every successful LISTEN, first and re-established: notifications sent while the
   * connection was down are lost, so whatever was derived from them must be read again.
   */
  onListening?: (reconnected: boolean) => void;
  /** Called when an established connection is lost (before the reconnection is scheduled). */
  onLost?: (error: unknown) => void;
  minDelayMs?: number;
  maxDelayMs?: number;
  /**
   * How often the connection is checked with a round trip. A connection whose last answer is
   * older than two intervals counts as not listening (copies kept on its word stop being served),
   * and one silent for four intervals is dropped and opened again.
   */
  pingIntervalMs?: number;
}

/**
 * LISTENs to a fixed set of channels on a dedicated connection. When the connection fails
 * (database restart, network cut, terminated backend) it reconnects by itself with exponential
 * back-off and full jitter, forever, until closed.
 */
export class NotificationListener {
  private readonly options: Required<NotificationListenerOptions>;
  private client: pg.Client | undefined;
  private closed = false;
  private attempts = 0;
  private everListened = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private listening = false;
  // When the server last answered on this connection. A black-holed link (a half-open TCP
  // connection) raises no error for minutes; without this, copies kept on the listener's word
  // would be served as current while changes go unheard.
  private lastAnswerAt = 0;
  private pingInFlight = false;
  private pingSentAt = 0;
  // A channel of this listener alone, for sync(): see there.
  private readonly syncChannel = `sync_${randomUUID().replaceAll('-', '')}`;
  private readonly syncWaiters = new Map<string, () => void>();
  private syncCount = 0;

  constructor(options: NotificationListenerOptions) {
    this.options = {
      minDelayMs: 200,
      maxDelayMs: 10_000,
      pingIntervalMs: 1_000,
      onListening: () => {},
      onLost: () => {},
      ...options,
    };
  }

  /**
   * Listening, and no ping has waited more than two intervals for its answer. Silence counts
   * only while a ping is unanswered: a late ping timer (a busy event loop, a starved process) is
   * no sign of a dead link, and judging by the age of the last answer made copies that were still
   * current be read again whenever the loop stalled for over a second.
   */
  get isListening(): boolean {
    if (!this.listening) return false;
    return !this.pingInFlight || Date.now() - this.pingSentAt <= 2 * this.options.pingIntervalMs;
  }

  start(): void {
    void this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.pingTimer);
    const client = this.client;
    this.client = undefined;
    this.listening = false;
    this.releaseSyncWaiters();
    await client?.end().catch(() => {});
  }

  /**
   * Resolves once every notification committed before the call has been delivered here:
   * PostgreSQL delivers notifications in commit order, so hearing a marker sent now on our own
   * channel means everything committed earlier has been heard. Resolves at once when not
   * listening (callers then must not rely on notifications anyway).
   */
  async sync(): Promise<void> {
    const client = this.client;
    if (!client || !this.listening) return;
    const marker = String(++this.syncCount);
    const heard = new Promise<void>((resolve) => this.syncWaiters.set(marker, resolve));
    try {
      await client.query('SELECT pg_notify($1, $2)', [this.syncChannel, marker]);
    } catch {
      this.syncWaiters.delete(marker);
      return;
    }
    await heard;
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({
      connectionString: this.options.databaseUrl,
      application_name: this.options.applicationName,
      keepAlive: true,
      options: SESSION_OPTIONS,
      connectionTimeoutMillis: 5_000,
    });
    this.client = client;
    let failed = false;
    const fail = (error: unknown) => {
      if (failed || this.closed || this.client !== client) return;
      failed = true;
      const wasListening = this.listening;
      this.listening = false;
      clearInterval(this.pingTimer);
      this.client = undefined;
      this.releaseSyncWaiters();
      void client.end().catch(() => {});
      if (wasListening) this.options.onLost(error);
      this.scheduleReconnect(error);
    };
    client.on('error', fail);
    client.on('end', () => fail(new Error('connection ended')));
    client.on('notification', (message) => this.deliver(message.channel, message.payload ?? ''));
    try {
      await client.connect();
      for (const channel of [...this.options.channels, this.syncChannel]) {
        await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      }
    } catch (error) {
      fail(error);
      return;
    }
    if (this.closed || this.client !== client) {
      await client.end().catch(() => {});
      return;
    }
    const reconnected = this.everListened;
    this.everListened = true;
    this.attempts = 0;
    this.listening = true;
    this.lastAnswerAt = Date.now();
    this.pingInFlight = false;
    this.pingTimer = setInterval(() => this.ping(client, fail), this.options.pingIntervalMs);
    this.pingTimer.unref();
    this.options.onListening(reconnected);
  }

  /** One round trip at a time; a connection silent for four intervals is dropped. */
  private ping(client: pg.Client, fail: (error: unknown) => void) {
    if (this.pingInFlight) {
      if (Date.now() - this.lastAnswerAt > 4 * this.options.pingIntervalMs)
        fail(new Error('no answer from the server'));
      return;
    }
    this.pingInFlight = true;
    this.pingSentAt = Date.now();
    client.query('SELECT 1').then(() => {
      if (this.client !== client) return;
      this.pingInFlight = false;
      this.lastAnswerAt = Date.now();
    }, fail);
  }

  private deliver(channel: string, payload: string) {
    if (channel === this.syncChannel) {
      this.syncWaiters.get(payload)?.();
      this.syncWaiters.delete(payload);
      return;
    }
    try {
      this.options.onNotification(channel, payload);
    } catch (error) {
      this.options.logger.error({ err: error, channel }, 'notification handler failed');
    }
  }

  /** A lost connection will never deliver the markers: the waiting callers go on without. */
  private releaseSyncWaiters() {
    for (const resolve of this.syncWaiters.values()) resolve();
    this.syncWaiters.clear();
  }

  private scheduleReconnect(error: unknown) {
    if (this.closed) return;
    this.attempts += 1;
    const ceiling = Math.min(
      this.options.maxDelayMs,
      this.options.minDelayMs * 2 ** (this.attempts - 1),
    );
    const delay = Math.round(this.options.minDelayMs / 2 + Math.random() * ceiling);
    this.options.logger.warn(
      {
        channels: this.options.channels,
        reason: error instanceof Error ? error.message : String(error),
        retryInMs: delay,
      },
      'notification connection lost; reconnecting',
    );
    this.retryTimer = setTimeout(() => void this.connect(), delay);
  }
}
