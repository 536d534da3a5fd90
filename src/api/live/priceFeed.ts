import {
  parsePriceTick,
  PRICE_TICKS_CHANNEL,
  type PriceTick,
} from '../../data/prices/priceEvents.ts';
import { NotificationListener } from '../../shared/db/notificationListener.ts';
import type { Logger } from '../../shared/logger.ts';
import { counter } from '../../shared/metrics.ts';

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
 * LISTENs to the harvester's price events on a dedicated connection, reconnecting by itself
 * (see NotificationListener), and hands on every well-formed event.
 */
export class PriceFeed {
  private readonly listener: NotificationListener;

  constructor(options: PriceFeedOptions) {
    const { onTick, onListening, ...connection } = options;
    this.listener = new NotificationListener({
      ...connection,
      applicationName: PRICE_FEED_APPLICATION_NAME,
      channels: [PRICE_TICKS_CHANNEL],
      onNotification: (_channel, payload) => {
        let tick: PriceTick;
        try {
          tick = parsePriceTick(payload);
        } catch (error) {
          feedEvents.inc({ event: 'malformed' });
          options.logger.warn({ err: error }, 'ignored a malformed price event');
          return;
        }
        onTick(tick);
      },
      onListening: (reconnected) => {
        feedEvents.inc({ event: reconnected ? 'reconnected' : 'connected' });
        if (reconnected) options.logger.info('price feed listening again');
        onListening(reconnected);
      },
      onLost: () => feedEvents.inc({ event: 'lost' }),
    });
  }

  get isListening(): boolean {
    return this.listener.isListening;
  }

  start(): void {
    this.listener.start();
  }

  close(): Promise<void> {
    return this.listener.close();
  }
}
