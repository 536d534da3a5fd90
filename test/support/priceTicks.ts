import pg from 'pg';
import { eventually } from './wait.ts';
import {
  parsePriceTick,
  PRICE_TICKS_CHANNEL,
  type PriceTick,
} from '../../src/data/prices/priceEvents.ts';

/** A LISTENer on the price event channel, collecting every message it hears. */
export interface TickListener {
  ticks: PriceTick[];
  raw: string[];
  /** Resolves once `count` messages have arrived (or rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<void>;
  /** Resolves once every price event committed before the call has been heard. */
  settled(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

// A marker notified on its own channel: PostgreSQL delivers notifications in commit order, so
// once the listener hears the marker it has heard every price event committed before it.
const SETTLED_CHANNEL = 'test_ticks_settled';

export async function listenToTicks(url: string): Promise<TickListener> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const ticks: PriceTick[] = [];
  const raw: string[] = [];
  const markers = new Set<string>();
  let markerCount = 0;
  client.on('notification', (message) => {
    if (message.channel === SETTLED_CHANNEL) markers.add(message.payload ?? '');
    if (message.channel !== PRICE_TICKS_CHANNEL || message.payload === undefined) return;
    raw.push(message.payload);
    ticks.push(parsePriceTick(message.payload));
  });
  await client.query(`LISTEN ${PRICE_TICKS_CHANNEL}`);
  await client.query(`LISTEN ${SETTLED_CHANNEL}`);
  return {
    ticks,
    raw,
    async waitFor(count, timeoutMs = 30_000) {
      await eventually(() => raw.length >= count, timeoutMs, `${count} price events`);
    },
    async settled(timeoutMs = 30_000) {
      const marker = String(++markerCount);
      await client.query('SELECT pg_notify($1, $2)', [SETTLED_CHANNEL, marker]);
      await eventually(() => markers.has(marker), timeoutMs, 'the price events to settle');
    },
    close: () => client.end(),
  };
}
