import type http from 'node:http';
import type { Server } from 'socket.io';
import type { Runtime } from '../../shared/runtime.ts';
import { readAtScrape } from '../../shared/metrics.ts';
import type { DataClient } from '../dataClient.ts';
import type { Portfolio } from '../portfolio/valuation.ts';
import type { SessionTimeouts } from '../session/sessionStore.ts';
import { onClientMessage, refuseUnknownEvents } from './clientMessages.ts';
import { Coalescer } from './coalescer.ts';
import { connections, emitted } from './liveMetrics.ts';
import {
  LIVE_NAMESPACE,
  openLiveServer,
  type LiveServer,
  type TraderSocket,
} from './liveServer.ts';
import {
  errorAck,
  handshakeAuth,
  MAX_SUBSCRIPTIONS_PER_SOCKET,
  subscribeMessage,
  unsubscribeMessage,
  type LivePrice,
} from './messages.ts';
import { LivePriceBook } from './priceBook.ts';
import { PriceFeed } from './priceFeed.ts';
import { PriceRooms, subscriptions } from './priceRooms.ts';
import { PortfolioTracker } from './portfolioTracker.ts';
import { checkSessionsEvery, endSessionConnections, sessionRoom } from './sessionExpiry.ts';

/** After the feed reconnects: past the adapter's own reconnection delay (at most 3 s). */
const HOLDINGS_CATCH_UP_MS = 3500;
/** Holdings of connected users are re-read this often whatever happens (lost notifications). */
const HOLDINGS_REFRESH_MS = 60_000;
const userRoom = (userId: number) => `user:${userId}`;
/** How often each instance checks that the sessions of its signed-in connections still live. */
const SESSION_CHECK_MS = 500;

export interface LiveGatewayOptions {
  data: DataClient;
  keys: string[];
  timeouts: SessionTimeouts;
  /** At most one price per code and one portfolio per user per this many ms (default 1000). */
  coalesceMs?: number;
  /** How often expired sessions' connections are looked for (default 500 ms). */
  sessionCheckMs?: number;
}

/**
 * Live updates over Socket.IO on the API's HTTP server (path /websocket, namespace /trader).
 * Prices come from this instance's own LISTEN on price_ticks and go to local rooms only (every
 * instance hears every tick); what one instance must tell the others (a user's holdings changed)
 * goes through the PostgreSQL adapter. Nothing is allocated until attach().
 */
export class LiveGateway {
  private readonly runtime: Runtime;
  private readonly options: LiveGatewayOptions;
  private live: LiveServer | undefined;
  private feed: PriceFeed | undefined;
  private readonly book: LivePriceBook;
  private readonly prices: Coalescer<string, LivePrice>;
  private readonly rooms = new PriceRooms(() => this.live?.nsp);
  private readonly portfolios: PortfolioTracker;
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopCountingClients: (() => void) | undefined;

  constructor(runtime: Runtime, options: LiveGatewayOptions) {
    this.runtime = runtime;
    this.options = options;
    const intervalMs = options.coalesceMs ?? 1000;
    this.book = new LivePriceBook(options.data);
    this.prices = new Coalescer(intervalMs, (code, price) => this.rooms.emit(code, price));
    this.portfolios = new PortfolioTracker({
      pool: runtime.pool,
      prices: () => this.book.prices,
      emit: (userId, portfolio) => this.emitPortfolio(userId, portfolio),
      intervalMs,
      logger: runtime.logger,
    });
  }

  get server(): Server | undefined {
    return this.live?.io;
  }

  get feedListening(): boolean {
    return this.feed?.isListening ?? false;
  }

  attach(httpServer: http.Server): void {
    if (this.live) throw new Error('the live gateway is already attached');
    const { config, logger, pool } = this.runtime;
    const { keys, timeouts } = this.options;
    const live = openLiveServer(httpServer, this.runtime, { keys, timeouts });
    const { nsp } = live;
    nsp.on('connection', (socket: TraderSocket) => this.onConnection(socket));
    nsp.on('holdingsChanged', (userId: unknown) => {
      if (typeof userId === 'number') void this.reloadHoldings(userId);
    });
    this.live = live;
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
    const sessionCheck = checkSessionsEvery(this.options.sessionCheckMs ?? SESSION_CHECK_MS, {
      namespace: () => this.live?.nsp,
      pool,
      timeouts,
      logger,
    });
    this.timers.add(sessionCheck);
  }

  /**
   * The session was destroyed (logout, or replaced at sign-in): its connections end on every
   * instance, through the adapter. A lost notification is caught by the periodic check.
   */
  sessionEnded(idHash: string): void {
    if (this.live) endSessionConnections(this.live.nsp, idHash);
  }

  /** The user's holdings changed: every instance re-values that user's portfolio. */
  holdingsChanged(userId: number): void {
    if (!this.live) return;
    void this.reloadHoldings(userId);
    this.live.nsp.serverSideEmit('holdingsChanged', userId);
  }

  async close(): Promise<void> {
    const live = this.live;
    this.live = undefined;
    this.stopCountingClients?.();
    this.stopCountingClients = undefined;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.prices.close();
    this.portfolios.close();
    await this.feed?.close();
    await live?.close();
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

  private emitPortfolio(userId: number, portfolio: Portfolio) {
    this.live?.nsp.local.to(userRoom(userId)).emit('portfolio', portfolio);
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
    if (socket.data.sessionHash) void socket.join(sessionRoom(socket.data.sessionHash));
    if (auth.batch) socket.data.batch = { codes: new Set() };
    socket.on('disconnect', () => {
      connections.dec({ kind });
      this.rooms.left(socket);
      if (userId !== undefined) this.portfolios.leave(userId);
    });

    const { logger } = this.runtime;
    onClientMessage(
      socket,
      'subscribe',
      subscribeMessage,
      async ({ codes }) => {
        const current = subscriptions(socket);
        const fresh = codes.filter((code) => !current.has(code));
        if (current.size + fresh.length > MAX_SUBSCRIPTIONS_PER_SOCKET) {
          return errorAck(
            'too_many_subscriptions',
            `A connection may follow at most ${MAX_SUBSCRIPTIONS_PER_SOCKET} currencies`,
          );
        }
        await this.rooms.follow(socket, codes, []);
        return { ok: true as const, ...(await this.quotes(codes)) };
      },
      logger,
    );
    onClientMessage(
      socket,
      'unsubscribe',
      unsubscribeMessage,
      async ({ codes }) => {
        await this.rooms.follow(socket, [], codes);
        return { ok: true as const, codes: [...subscriptions(socket)] };
      },
      logger,
    );
    refuseUnknownEvents(socket, ['subscribe', 'unsubscribe']);

    void this.greet(socket, userId, auth.codes ?? []);
  }

  /** The `snapshot` every connection starts with: what it follows now, and its portfolio. */
  private async greet(socket: TraderSocket, userId: number | undefined, asked: string[]) {
    try {
      const codes = [...new Set(asked)];
      if (codes.length > 0) await this.rooms.follow(socket, codes, []);
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
}
