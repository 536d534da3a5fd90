import { createHash } from 'node:crypto';
import type { LivePrice } from './messages.ts';

/**
 * Batched delivery: connections that asked for it (`auth.batch`) get one `prices` event per
 * harvest cycle instead of one `price` event per currency, since a frame per currency per client
 * is what limits fan-out (136 currencies × 1,000 clients = 136,000 frames a cycle). Connections
 * following the same set of codes share a room, so each batch is encoded once per distinct set
 * and written to every member; a dashboard following everything is one such set.
 */
export class BatchRooms {
  private readonly sets = new Map<string, { codes: ReadonlySet<string>; members: number }>();

  /** The room for this set of codes (counted as one more member); undefined for no codes. */
  enter(codes: ReadonlySet<string>): string | undefined {
    if (codes.size === 0) return undefined;
    const room = `set:${createHash('sha1')
      .update([...codes].sort().join(','))
      .digest('base64url')}`;
    const entry = this.sets.get(room);
    if (entry) entry.members += 1;
    else this.sets.set(room, { codes: new Set(codes), members: 1 });
    return room;
  }

  exit(room: string | undefined): void {
    if (!room) return;
    const entry = this.sets.get(room);
    if (!entry) return;
    entry.members -= 1;
    if (entry.members <= 0) this.sets.delete(room);
  }

  /** For each room, the batches of its codes among the moved prices (one per price instant). */
  *batches(moved: ReadonlyMap<string, LivePrice>): Generator<[string, PriceBatch]> {
    const byInstant = new Map<string, LivePrice[]>();
    for (const price of moved.values()) {
      const group = byInstant.get(price.timestamp);
      if (group) group.push(price);
      else byInstant.set(price.timestamp, [price]);
    }
    for (const group of byInstant.values()) group.sort((a, b) => (a.code < b.code ? -1 : 1));
    for (const [room, { codes: followed }] of this.sets) {
      for (const [timestamp, prices] of byInstant) {
        const codes: string[] = [];
        const values: number[] = [];
        for (const price of prices) {
          if (followed.has(price.code)) {
            codes.push(price.code);
            values.push(price.value);
          }
        }
        if (codes.length > 0) yield [room, { timestamp, codes, values }];
      }
    }
  }
}

/**
 * The `prices` event: the followed codes that moved (in code order) and their values, position
 * by position, all standing for `timestamp`. Two flat arrays rather than an object keyed by code:
 * a client parses them in half the time (measured: 19 µs against 35 µs for 136 currencies),
 * which is what thousands of connections on one machine, or a phone, spend most on.
 */
export interface PriceBatch {
  timestamp: string;
  codes: string[];
  values: number[];
}
