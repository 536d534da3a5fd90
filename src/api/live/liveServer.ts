import type http from 'node:http';
import { createAdapter } from '@socket.io/postgres-adapter';
import type pg from 'pg';
import { Server, type DefaultEventsMap, type Namespace, type Socket } from 'socket.io';
import { allowedOrigins } from '../../shared/config.ts';
import { createPgPool } from '../../shared/db/pool.ts';
import type { Runtime } from '../../shared/runtime.ts';
import type { SessionTimeouts } from '../session/sessionStore.ts';
import { closableAdapterPool } from './adapterPool.ts';
import { createHandshakeIdentity, originAllowed } from './handshake.ts';

// The Socket.IO server of the live gateway: where it listens, who may connect (origin, session),
// and the PostgreSQL adapter through which instances reach each other's connections.

export const LIVE_PATH = '/websocket';
export const LIVE_NAMESPACE = '/trader';
/** Largest message a client may send, in bytes. */
export const LIVE_MAX_MESSAGE_BYTES = 64 * 1024;

export interface SocketData {
  userId?: number;
  /** The signed-in session's id hash; the connection ends when the session does. */
  sessionHash?: string;
  /** Batched delivery: the codes followed and the shared room of that set. */
  batch?: { codes: Set<string>; room?: string };
}
export type TraderSocket = Socket<DefaultEventsMap, DefaultEventsMap, DefaultEventsMap, SocketData>;

export interface LiveServer {
  io: Server;
  nsp: Namespace;
  /** Ends this instance's connections and the adapter; the HTTP server is left to its owner. */
  close(): Promise<void>;
}

/**
 * Attaches Socket.IO to the API's HTTP server: the /trader namespace, which names the signed-in
 * user of each connection at the handshake (or refuses it when the session cannot be checked).
 */
export function openLiveServer(
  httpServer: http.Server,
  runtime: Runtime,
  session: { keys: string[]; timeouts: SessionTimeouts },
): LiveServer {
  const { config, logger } = runtime;
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
  const adapterPool = closableAdapterPool(createPgPool(config.DATABASE_URL, 3));
  io.adapter(
    createAdapter(adapterPool as unknown as pg.Pool, {
      tableName: 'app.socket_io_attachments',
      errorHandler: (error) => logger.warn({ err: error }, 'Socket.IO adapter error'),
    }),
  );
  const nsp = io.of(LIVE_NAMESPACE);
  const identify = createHandshakeIdentity({
    pool: runtime.pool,
    timeouts: session.timeouts,
    keys: session.keys,
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
  return {
    io,
    nsp,
    close: async () => {
      // Not io.close(): that also closes the HTTP server, which its owner closes (drained).
      // Local only: the adapter would otherwise disconnect the clients of other instances too.
      nsp.local.disconnectSockets(true);
      io.of('/').local.disconnectSockets(true);
      await Promise.allSettled([nsp.adapter.close(), io.of('/').adapter.close()]);
      io.engine.close();
      await adapterPool.end();
    },
  };
}
