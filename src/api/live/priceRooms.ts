import type { Namespace } from 'socket.io';
import { BatchRooms } from './batchRooms.ts';
import { emitted } from './liveMetrics.ts';
import type { TraderSocket } from './liveServer.ts';
import type { LivePrice } from './messages.ts';

// Who hears which price: a connection follows codes either through one room per code (a `price`
// event per code) or, when it asked for batches, through the shared room of its whole set (one
// `prices` event per cycle). Prices go to this instance's connections only: every instance hears
// every tick itself.

const PRICE_ROOM = 'price:';

export class PriceRooms {
  private readonly namespace: () => Namespace | undefined;
  private readonly batchRooms = new BatchRooms();
  private pendingBatch = new Map<string, LivePrice>();
  private batchScheduled = false;

  /** `namespace`: the /trader namespace while the gateway is attached. */
  constructor(namespace: () => Namespace | undefined) {
    this.namespace = namespace;
  }

  /** Sends a price that moved to the connections following its code. */
  emit(code: string, price: LivePrice): void {
    const nsp = this.namespace();
    if (!nsp) return;
    if (nsp.adapter.rooms.has(PRICE_ROOM + code)) {
      nsp.local.to(PRICE_ROOM + code).emit('price', price);
      emitted.inc({ event: 'price' });
    }
    // Everything the coalescer lets out in this turn of the event loop (a whole cycle, usually)
    // goes to batch connections as one event.
    this.pendingBatch.set(code, price);
    if (!this.batchScheduled) {
      this.batchScheduled = true;
      setImmediate(() => this.flushBatch());
    }
  }

  private flushBatch() {
    this.batchScheduled = false;
    const moved = this.pendingBatch;
    this.pendingBatch = new Map();
    const nsp = this.namespace();
    if (!nsp) return;
    for (const [room, batch] of this.batchRooms.batches(moved)) {
      nsp.local.to(room).emit('prices', batch);
      emitted.inc({ event: 'prices' });
    }
  }

  /** Follows more codes (or fewer): price rooms per code, or the batch room of the new set. */
  async follow(socket: TraderSocket, add: readonly string[], remove: readonly string[]) {
    const batch = socket.data.batch;
    if (!batch) {
      if (add.length > 0) await socket.join(add.map((code) => PRICE_ROOM + code));
      for (const code of remove) await socket.leave(PRICE_ROOM + code);
      return;
    }
    for (const code of add) batch.codes.add(code);
    for (const code of remove) batch.codes.delete(code);
    const room = this.batchRooms.enter(batch.codes);
    if (room !== batch.room) {
      if (batch.room) await socket.leave(batch.room);
      if (room) await socket.join(room);
    }
    this.batchRooms.exit(batch.room);
    batch.room = room;
  }

  /** The connection is gone: its batch set has one member less. */
  left(socket: TraderSocket): void {
    this.batchRooms.exit(socket.data.batch?.room);
  }
}

/** The codes a connection follows. */
export function subscriptions(socket: TraderSocket): Set<string> {
  if (socket.data.batch) return new Set(socket.data.batch.codes);
  const codes = new Set<string>();
  for (const room of socket.rooms) {
    if (room.startsWith(PRICE_ROOM)) codes.add(room.slice(PRICE_ROOM.length));
  }
  return codes;
}
