// The client side of bench:live, in its own process: N socket.io-client connections to /trader,
// each following every code (batched `prices` events, or a `price` event per currency with
// mode `price`), recording when prices arrive. Driven over IPC by run.ts.

import { io, type Socket } from 'socket.io-client';

const [url = '', countArg = '0', codesArg = '[]', mode = 'batch'] = process.argv.slice(2);
const count = Number(countArg);
const codes = JSON.parse(codesArg) as string[];
const BATCH = 250;

interface TickReceipts {
  /** Per client: arrival time of the first and of the last price of the tick, and how many. */
  first: Float64Array;
  last: Float64Array;
  seen: Uint32Array;
}

const receipts = new Map<string, TickReceipts>();
const sockets: Socket[] = [];

function receiptsOf(timestamp: string): TickReceipts {
  let r = receipts.get(timestamp);
  if (!r) {
    r = {
      first: new Float64Array(count),
      last: new Float64Array(count),
      seen: new Uint32Array(count),
    };
    receipts.set(timestamp, r);
  }
  return r;
}

function open(index: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = io(`${url}/trader`, {
      path: '/websocket',
      transports: ['websocket'],
      auth: { codes, batch: mode === 'batch' },
      reconnection: false,
      timeout: 60_000,
    });
    socket.on('price', (price: { timestamp: string }) => {
      const now = Date.now();
      const r = receiptsOf(price.timestamp);
      if (r.seen[index] === 0) r.first[index] = now;
      r.last[index] = now;
      r.seen[index]! += 1;
    });
    socket.on('prices', (batch: { timestamp: string; codes: string[]; values: number[] }) => {
      const now = Date.now();
      const r = receiptsOf(batch.timestamp);
      if (r.seen[index] === 0) r.first[index] = now;
      r.last[index] = now;
      r.seen[index]! += batch.codes.length;
    });
    socket.once('snapshot', () => resolve());
    socket.once('connect_error', reject);
    sockets.push(socket);
  });
}

process.on('message', (message: { kind: string; timestamp?: string }) => {
  if (message.kind === 'collect' && message.timestamp) {
    const r = receiptsOf(message.timestamp);
    process.send!({
      kind: 'receipts',
      first: Array.from(r.first),
      last: Array.from(r.last),
      seen: Array.from(r.seen),
    });
    receipts.delete(message.timestamp);
  } else if (message.kind === 'close') {
    for (const socket of sockets) socket.disconnect();
    process.exit(0);
  }
});

const started = Date.now();
for (let i = 0; i < count; i += BATCH) {
  const batch: Array<Promise<void>> = [];
  for (let j = i; j < Math.min(count, i + BATCH); j++) batch.push(open(j));
  await Promise.all(batch);
}
process.send!({ kind: 'ready', connectMs: Date.now() - started });
