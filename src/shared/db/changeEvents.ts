import type { Logger } from '../logger.ts';
import { counter } from '../metrics.ts';
import { NotificationListener } from './notificationListener.ts';

// What processes keep in memory between requests (the encoded price snapshot, verified service
// tokens) is only as good as their knowledge of changes. Triggers (sql/0225_change_events.sql)
// NOTIFY a topic's channel in every transaction that writes one of its tables, whoever writes:
// the harvest, the bulk loader, a backfill, `platform token revoke`, an operator's psql. Every
// process keeping such a copy LISTENs here and drops the copy on each notification.

/** The topics and their channels; the triggers name the same channels. */
export const CHANGE_CHANNELS = {
  /** currency_snapshots, currencies or price_observations changed. */
  market: 'market_snapshot_changed',
  /** service_tokens changed (revoked, deleted, scopes). */
  tokens: 'service_tokens_changed',
} as const;
export type ChangeTopic = keyof typeof CHANGE_CHANNELS;

const TOPICS = Object.keys(CHANGE_CHANNELS) as ChangeTopic[];

const changeEvents = counter(
  'change_notifications_total',
  'Change notifications heard, by topic, and changes of the listening connection.',
  ['event'],
);

/**
 * One LISTEN connection per process for every topic. `generation(topic)` moves on every
 * notification of the topic and every time the connection is established or lost: a copy made
 * at generation g is current while `isListening` and the generation is still g. While not
 * listening, nothing may be served from memory (notifications are lost meanwhile).
 */
export class ChangeEvents {
  private readonly listener: NotificationListener;
  private readonly generations = new Map<ChangeTopic, number>(TOPICS.map((t) => [t, 0]));
  private readonly watchers = new Set<(topic: ChangeTopic) => void>();

  constructor(databaseUrl: string, logger: Logger, applicationName: string) {
    this.listener = new NotificationListener({
      databaseUrl,
      applicationName,
      logger,
      channels: Object.values(CHANGE_CHANNELS),
      onNotification: (channel) => {
        const topic = TOPICS.find((t) => CHANGE_CHANNELS[t] === channel);
        if (!topic) return;
        changeEvents.inc({ event: topic });
        this.bump([topic]);
      },
      onListening: () => {
        changeEvents.inc({ event: 'listening' });
        this.bump(TOPICS);
      },
      onLost: () => {
        changeEvents.inc({ event: 'lost' });
        this.bump(TOPICS);
      },
    });
    this.listener.start();
  }

  get isListening(): boolean {
    return this.listener.isListening;
  }

  generation(topic: ChangeTopic): number {
    return this.generations.get(topic)!;
  }

  /** Called after every change of `topic`'s generation (to refresh a copy ahead of demand). */
  watch(callback: (topic: ChangeTopic) => void): void {
    this.watchers.add(callback);
  }

  /** Resolves once every change committed before the call has been heard. */
  sync(): Promise<void> {
    return this.listener.sync();
  }

  close(): Promise<void> {
    this.watchers.clear();
    return this.listener.close();
  }

  private bump(topics: readonly ChangeTopic[]) {
    for (const topic of topics) this.generations.set(topic, this.generation(topic) + 1);
    for (const topic of topics) for (const watcher of this.watchers) watcher(topic);
  }
}
