import type http from 'node:http';
import { createAdapter } from '@socket.io/postgres-adapter';
import type pg from 'pg';
import { Server, type DefaultEventsMap, type Namespace, type Socket } from 'socket.io';
import type { z } from 'zod';
import { allowedOrigins } from '../../shared/config.ts';
import { createPgPool } from '../../shared/db/pool.ts';
import { counter, gauge, readAtScrape } from '../../shared/metrics.ts';
import type { Runtime } from '../../shared/runtime.ts';
import type { DataClient } from '../dataClient.ts';
import type { Portfolio } from '../portfolio/valuation.ts';
import { aliveSessions, type SessionTimeouts } from '../session/sessionStore.ts';
import { closableAdapterPool } from './adapterPool.ts';
import { BatchRooms } from './batchRooms.ts';
import { Coalescer } from './coalescer.ts';
import { createHandshakeIdentity, originAllowed } from './handshake.ts';
import {
  errorAck,
  handshakeAuth,
  invalidMessageAck,
  MAX_SUBSCRIPTIONS_PER_SOCKET,
  subscribeMessage,
  unsubscribeMessage,
  type LivePrice,
} from './messages.ts';
import { LivePriceBook } from './priceBook.ts';
import { PriceFeed } from './priceFeed.ts';
import { PortfolioTracker } from './portfolioTracker.ts';

export const LIVE_PATH = '/websocket';
export const LIVE_NAMESPACE = '/trader';
/** Largest message a client may send, in bytes. */
export const LIVE_MAX_MESSAGE_BYTES = 64 * 1024;

const PRICE_ROOM = 'price:';
/** After the feed reconnects: past the adapter's own reconnection delay (at most 3 s). */
const HOLDINGS_CATCH_UP_MS = 3500;
/** Holdings of connected users are re-read this often whatever happens (lost notifications). */
const HOLDINGS_REFRESH_MS = 60_000;
const userRoom = (userId: number) => `user:${userId}`;
const SESSION_ROOM = 'session:';
/** How often each instance checks that the sessions of its signed-in connections still live. */
const SESSION_CHECK_MS = 500;

interface SocketData {
  userId?: number;
  /** The signed-in session's id hash; the connection ends when the session does. */
  sessionHash?: string;
  /** Batched delivery: the codes followed and the shared room of that set. */
  batch?: { codes: Set<string>; room?: string };
}
type TraderSocket = Socket<DefaultEventsMap, DefaultEventsMap, DefaultEventsMap, SocketData>;

export interface LiveGatewayOptions {
  data: DataClient;
  keys: string[];
  timeouts: SessionTimeouts;
  /** At most one price per code and one portfolio per user per this many ms (default 1000). */
  coalesceMs?: number;
  /** How often expired sessions' connections are looked for (default 500 ms). */
  sessionCheckMs?: number;
}

const connections = gauge('api_live_connections', 'Open Socket.IO connections on /trader.', [
  'kind',
]);
const messages = counter('api_live_messages_total', 'Client messages on /trader.', [
  'event',
  'outcome',
]);
const emitted = counter('api_live_events_emitted_total', 'Events sent to rooms on /trader.', [
  'event',
]);

/**
 * Live updates over Socket.IO on the API's HTTP server (path /websocket, namespace /trader).
 * Prices come from this instance's own LISTEN on price_ticks and go to local rooms only (every
 * instance hears every tick); what one instance must tell the others (a user's holdings changed)
 * goes through the PostgreSQL adapter. Nothing is allocated until attach().
 */
export class LiveGateway {
  private readonly runtime: Runtime;
  private readonly options: LiveGatewayOptions;
  private io: Server | undefined;
  private nsp: Namespace | undefined;
  private adapterPool: ReturnType<typeof closableAdapterPool> | undefined;
  private feed: PriceFeed | undefined;
  private readonly book: LivePriceBook;
  private readonly prices: Coalescer<string, LivePrice>;
  private readonly portfolios: PortfolioTracker;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly batchRooms = new BatchRooms();
  private pendingBatch = new Map<string, LivePrice>();
  private batchScheduled = false;
  private stopCountingClients: (() => void) | undefined;

  constructor(runtime: Runtime, options: LiveGatewayOptions) {
    this.runtime = runtime;
    this.options = options;
    const intervalMs = options.coalesceMs ?? 1000;
    this.book = new LivePriceBook(options.data);
    this.prices = new Coalescer(intervalMs, (code, price) => this.emitPrice(code, price));
    this.portfolios = new PortfolioTracker({
      pool: runtime.pool,
      prices: () => this.book.prices,
      emit: (userId, portfolio) => this.emitPortfolio(userId, portfolio),
      intervalMs,
      logger: runtime.logger,
    });
  }

  get server(): Server | undefined {
    return this.io;
  }

  get feedListening(): boolean {
    return this.feed?.isListening ?? false;
  }

  attach(httpServer: http.Server): void {
    if (this.io) throw new Error('the live gateway is already attached');
    const { config, logger } = this.runtime;
    const allowed = allowedOrigins(config);
    const io = new Server(httpServer, {
      path: LIVE_PATH,
      serveClient: true,
      maxHttpBufferSize: LIVE_MAX_MESSAGE_BYTES,
      allowRequest: (request, callback) => {
        const ok = originAllowed(request, allowed);
        callback(ok ? null : 'origin not allowed', ok);
      },
      cors: allowed.length > 0 ? { origin: [...allowed], credentials: true } : undefined,
    });
    this.adapterPool = closableAdapterPool(createPgPool(config.DATABASE_URL, 3));
    io.adapter(
      createAdapter(this.adapterPool as unknown as pg.Pool, {
        tableName: 'app.socket_io_attachments',
        errorHandler: (error) => logger.warn({ err: error }, 'Socket.IO adapter error'),
      }),
    );
    const nsp = io.of(LIVE_NAMESPACE);
    const identify = createHandshakeIdentity({
      pool: this.runtime.pool,
      timeouts: this.options.timeouts,
      keys: this.options.keys,
    });
    nsp.use((socket, next) => {
      identify(socket.request).then(
        (identity) => {
          (socket as TraderSocket).data.userId = identity?.userId;
          (socket as TraderSocket).data.sessionHash = identity?.sessionHash;
          next();
        },
        (error: unknown) => {
          logger.warn({ err: error }, 'live handshake: session check failed');
          const refusal = new Error('The session could not be checked; try again shortly.');
          (refusal as Error & { data: unknown }).data = { code: 'session_unavailable' };
          next(refusal);
        },
      );
    });
    nsp.on('connection', (socket: TraderSocket) => this.onConnection(socket));
    nsp.on('holdingsChanged', (userId: unknown) => {
      if (typeof userId === 'number') void this.reloadHoldings(userId);
    });
    this.io = io;
    this.nsp = nsp;
    // socketio_connected_clients: this server's own sockets, counted when Prometheus asks.
    this.stopCountingClients = readAtScrape('socketio_connected_clients', () => [
      { labels: { namespace: LIVE_NAMESPACE }, value: nsp.sockets.size },
    ]);

    this.feed = new PriceFeed({
      databaseUrl: config.DATABASE_URL,
      logger,
      onTick: (tick) => {
        this.pricesMoved(this.book.apply(tick));
        if (this.book.hasUnnamed) this.reloadBook();
      },
      onListening: (reconnected) => {
        // Holdings notifications travel by NOTIFY too, and the adapter reconnects a little
        // later than the feed (within ~3 s): re-read holdings once it surely has.
        if (reconnected) this.later(HOLDINGS_CATCH_UP_MS, () => this.portfolios.reloadAll());
        // First listen primes the book; after a reconnection, catch up on what was missed.
        this.reloadBook();
      },
    });
    this.feed.start();
    const refresh = setInterval(() => void this.portfolios.reloadAll(), HOLDINGS_REFRESH_MS);
    refresh.unref();
    this.timers.add(refresh);
    this.checkSessionsEvery(this.options.sessionCheckMs ?? SESSION_CHECK_MS);
  }

  /**
   * The session was destroyed (logout, or replaced at sign-in): its connections end on every
   * instance, through the adapter. A lost notification is caught by the periodic check.
   */
  sessionEnded(idHash: string): void {
    this.nsp?.in(SESSION_ROOM + idHash).disconnectSockets(true);
  }

  /** Ends this instance's connections whose session expired or was deleted (idle, absolute). */
  private checkSessionsEvery(ms: number) {
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      void this.endExpiredSessions().finally(() => (running = false));
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }

  private async endExpiredSessions() {
    const nsp = this.nsp;
    if (!nsp) return;
    const hashes: string[] = [];
    for (const room of nsp.adapter.rooms.keys()) {
      if (room.startsWith(SESSION_ROOM)) hashes.push(room.slice(SESSION_ROOM.length));
    }
    if (hashes.length === 0) return;
    try {
      const alive = await aliveSessions(this.runtime.pool, this.options.timeouts, hashes);
      const ended = hashes.filter((hash) => !alive.has(hash)).map((h) => SESSION_ROOM + h);
      if (ended.length > 0) nsp.local.in(ended).disconnectSockets(true);
    } catch (error) {
      // The database is away: keep the connections rather than drop every signed-in user.
      this.runtime.logger.warn({ err: error }, 'live: could not check sessions');
    }
  }

  /** The user's holdings changed: every instance re-values that user's portfolio. */
  holdingsChanged(userId: number): void {
    if (!this.nsp) return;
    void this.reloadHoldings(userId);
    this.nsp.serverSideEmit('holdingsChanged', userId);
  }

  async close(): Promise<void> {
    const io = this.io;
    const nsp = this.nsp;
    this.io = undefined;
    this.nsp = undefined;
    this.stopCountingClients?.();
    this.stopCountingClients = undefined;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.prices.close();
    this.portfolios.close();
    await this.feed?.close();
    if (!io || !nsp) return;
    // Not io.close(): that also closes the HTTP server, which its owner closes (drained).
    // Local only: the adapter would otherwise disconnect the clients of other instances too.
    nsp.local.disconnectSockets(true);
    io.of('/').local.disconnectSockets(true);
    await Promise.allSettled([nsp.adapter.close(), io.of('/').adapter.close()]);
    io.engine.close();
    await this.adapterPool?.end();
  }

  private later(ms: number, run: () => Promise<void>) {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void run();
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }

  /** Re-reads current prices (and the names and logos of codes first seen in an event). */
  private reloadBook() {
    this.book.reload().then(
      (moved) => this.pricesMoved(moved),
      (error: unknown) =>
        this.runtime.logger.warn({ err: error }, 'live prices: could not read current prices'),
    );
  }

  private pricesMoved(moved: LivePrice[]) {
    if (moved.length === 0) return;
    for (const price of moved) this.prices.push(price.code, price);
    this.portfolios.pricesMoved(new Set(moved.map((p) => p.code)));
  }

  private emitPrice(code: string, price: LivePrice) {
    const nsp = this.nsp;
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
    const nsp = this.nsp;
    if (!nsp) return;
    for (const [room, batch] of this.batchRooms.batches(moved)) {
      nsp.local.to(room).emit('prices', batch);
      emitted.inc({ event: 'prices' });
    }
  }

  /** Follows more codes (or fewer): price rooms per code, or the batch room of the new set. */
  private async follow(socket: TraderSocket, add: readonly string[], remove: readonly string[]) {
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

  private emitPortfolio(userId: number, portfolio: Portfolio) {
    this.nsp?.local.to(userRoom(userId)).emit('portfolio', portfolio);
    emitted.inc({ event: 'portfolio' });
  }

  private async reloadHoldings(userId: number) {
    try {
      await this.portfolios.holdingsChanged(userId);
    } catch (error) {
      this.runtime.logger.warn({ err: error, userId }, 'live: could not re-read holdings');
    }
  }

  private onConnection(socket: TraderSocket) {
    const { userId } = socket.data;
    const kind = userId === undefined ? 'anonymous' : 'signed_in';
    connections.inc({ kind });
    const auth = handshakeAuth.parse(socket.handshake.auth);
    if (socket.data.sessionHash) void socket.join(SESSION_ROOM + socket.data.sessionHash);
    if (auth.batch) socket.data.batch = { codes: new Set() };
    socket.on('disconnect', () => {
      connections.dec({ kind });
      this.batchRooms.exit(socket.data.batch?.room);
      if (userId !== undefined) this.portfolios.leave(userId);
    });

    this.handle(socket, 'subscribe', subscribeMessage, async ({ codes }) => {
      const current = subscriptions(socket);
      const fresh = codes.filter((code) => !current.has(code));
      if (current.size + fresh.length > MAX_SUBSCRIPTIONS_PER_SOCKET) {
        return errorAck(
          'too_many_subscriptions',
          `A connection may follow at most ${MAX_SUBSCRIPTIONS_PER_SOCKET} currencies`,
        );
      }
      await this.follow(socket, codes, []);
      return { ok: true as const, ...(await this.quotes(codes)) };
    });
    this.handle(socket, 'unsubscribe', unsubscribeMessage, async ({ codes }) => {
      await this.follow(socket, [], codes);
      return { ok: true as const, codes: [...subscriptions(socket)] };
    });
    socket.onAny((event: string, ...args: unknown[]) => {
      if (event === 'subscribe' || event === 'unsubscribe') return;
      messages.inc({ event: 'unknown', outcome: 'refused' });
      const ack = args.at(-1);
      if (typeof ack === 'function') {
        (ack as (response: unknown) => void)(
          errorAck('unknown_event', `Unknown event '${event}'; send subscribe or unsubscribe`),
        );
      }
    });

    void this.greet(socket, userId, auth.codes ?? []);
  }

  /** The `snapshot` every connection starts with: what it follows now, and its portfolio. */
  private async greet(socket: TraderSocket, userId: number | undefined, asked: string[]) {
    try {
      const codes = [...new Set(asked)];
      if (codes.length > 0) await this.follow(socket, codes, []);
      const { prices } = await this.quotes(codes);
      let portfolio: Portfolio | null = null;
      if (userId !== undefined) {
        await socket.join(userRoom(userId));
        portfolio = await this.portfolios.join(userId);
      }
      if (socket.connected) {
        socket.emit('snapshot', { signedIn: userId !== undefined, prices, portfolio });
      }
    } catch (error) {
      this.runtime.logger.warn({ err: error }, 'live: could not send the snapshot');
      socket.emit('snapshot', {
        signedIn: userId !== undefined,
        prices: [],
        portfolio: null,
        error: { code: 'snapshot_unavailable', message: 'Current values are unavailable' },
      });
    }
  }

  private async quotes(codes: readonly string[]) {
    if (!this.book.isLoaded) {
      await this.book.ensureLoaded().catch((error: unknown) => {
        this.runtime.logger.warn({ err: error }, 'live: current prices unavailable');
      });
    }
    const prices: LivePrice[] = [];
    const unknown: string[] = [];
    for (const code of codes) {
      const quote = this.book.quote(code);
      if (quote) prices.push(quote);
      else unknown.push(code);
    }
    return { prices, unknown };
  }

  /** Validates, runs and acknowledges one kind of client message; nothing escapes. */
  private handle<S extends z.ZodType, R>(
    socket: TraderSocket,
    event: string,
    schema: S,
    run: (payload: z.output<S>) => Promise<R>,
  ) {
    socket.on(event, (...args: unknown[]) => {
      const ack = typeof args.at(-1) === 'function' ? (args.pop() as (r: unknown) => void) : noAck;
      const parsed = schema.safeParse(args[0]);
      if (!parsed.success) {
        messages.inc({ event, outcome: 'invalid' });
        ack(invalidMessageAck(event, parsed.error));
        return;
      }
      run(parsed.data).then(
        (result) => {
          messages.inc({ event, outcome: 'ok' });
          ack(result);
        },
        (error: unknown) => {
          messages.inc({ event, outcome: 'error' });
          this.runtime.logger.error({ err: error, event }, 'live message handler failed');
          ack(errorAck('internal_error', 'The message could not be handled'));
        },
      );
    });
  }
}

function noAck() {}

function subscriptions(socket: TraderSocket): Set<string> {
  if (socket.data.batch) return new Set(socket.data.batch.codes);
  const codes = new Set<string>();
  for (const room of socket.rooms) {
    if (room.startsWith(PRICE_ROOM)) codes.add(room.slice(PRICE_ROOM.length));
  }
  return codes;
}
