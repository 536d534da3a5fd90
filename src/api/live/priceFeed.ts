import pg from 'pg';
import {
  parsePriceTick,
  PRICE_TICKS_CHANNEL,
  type PriceTick,
} from '../../data/prices/priceEvents.ts';
import type { Logger } from '../../shared/logger.ts';
import { counter } from '../../shared/metrics.ts';
import { SESSION_OPTIONS } from '../../shared/db/sessionSettings.ts';

/** application_name of the feed's connection (what `pg_stat_activity` shows). */
export const PRICE_FEED_APPLICATION_NAME = 'api:price-feed';

export interface PriceFeedOptions {
  databaseUrl: string;
  logger: Logger;
  onTick: (tick: PriceTick) => void;
  /**
   * Called after every successful LISTEN, first and re-established: the caller re-reads current
   * prices, since ticks sent while the connection was down are lost.
   */
  onListening: (reconnected: boolean) => void;
  minDelayMs?: number;
  maxDelayMs?: number;
  /** How often an idle connection is checked with a round trip. */
  pingIntervalMs?: number;
}

const feedEvents = counter('api_price_feed_events_total', 'Price feed connection events.', [
  'event',
]);

/**
 * LISTENs to the harvester's price events on a dedicated connection. When the connection fails
 * (database restart, network cut, terminated backend) it reconnects by itself with exponential
 * back-off and full jitter, forever, until closed.
 */
export class PriceFeed {
  private readonly options: Required<PriceFeedOptions>;
  private client: pg.Client | undefined;
  private closed = false;
  private attempts = 0;
  private everListened = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private listening = false;

  constructor(options: PriceFeedOptions) {
    this.options = { minDelayMs: 200, maxDelayMs: 10_000, pingIntervalMs: 15_000, ...options };
  }

  get isListening(): boolean {
    return this.listening;
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
    await client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({
      connectionString: this.options.databaseUrl,
      application_name: PRICE_FEED_APPLICATION_NAME,
      keepAlive: true,
      options: SESSION_OPTIONS,
      connectionTimeoutMillis: 5_000,
    });
    this.client = client;
    let failed = false;
    const fail = (error: unknown) => {
      if (failed || this.closed || this.client !== client) return;
      failed = true;
      this.listening = false;
      clearInterval(this.pingTimer);
      this.client = undefined;
      void client.end().catch(() => {});
      this.scheduleReconnect(error);
    };
    client.on('error', fail);
    client.on('end', () => fail(new Error('connection ended')));
    client.on('notification', (message) => {
      if (message.channel !== PRICE_TICKS_CHANNEL || message.payload === undefined) return;
      this.deliver(message.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${PRICE_TICKS_CHANNEL}`);
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
    feedEvents.inc({ event: reconnected ? 'reconnected' : 'connected' });
    if (reconnected) this.options.logger.info('price feed listening again');
    this.pingTimer = setInterval(() => {
      client.query('SELECT 1').catch(fail);
    }, this.options.pingIntervalMs);
    this.pingTimer.unref();
    this.options.onListening(reconnected);
  }

  private deliver(payload: string) {
    let tick: PriceTick;
    try {
      tick = parsePriceTick(payload);
    } catch (error) {
      feedEvents.inc({ event: 'malformed' });
      this.options.logger.warn({ err: error }, 'ignored a malformed price event');
      return;
    }
    try {
      this.options.onTick(tick);
    } catch (error) {
      this.options.logger.error({ err: error }, 'price event handler failed');
    }
  }

  private scheduleReconnect(error: unknown) {
    if (this.closed) return;
    this.attempts += 1;
    const ceiling = Math.min(
      this.options.maxDelayMs,
      this.options.minDelayMs * 2 ** (this.attempts - 1),
    );
    const delay = Math.round(this.options.minDelayMs / 2 + Math.random() * ceiling);
    feedEvents.inc({ event: 'lost' });
    this.options.logger.warn(
      { reason: error instanceof Error ? error.message : String(error), retryInMs: delay },
      'price feed connection lost; reconnecting',
    );
    this.retryTimer = setTimeout(() => void this.connect(), delay);
  }
}
