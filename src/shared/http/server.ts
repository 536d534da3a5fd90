import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type Koa from 'koa';
import type { BeforeKoa } from './refuseBeforeKoa.ts';
import { markArrival } from './shedAnswers.ts';

export interface RunningServer {
  server: http.Server;
  url: string;
  port: number;
  /** Stops accepting, lets in-flight requests finish (bounded), then closes idle keep-alives. */
  close(graceMs?: number): Promise<void>;
}

// What answers some of an app's requests before Koa does (refuseBeforeKoa.ts), set by the
// service that built the app; every server listening with that app puts it first.
const beforeKoaOf = new WeakMap<Koa, BeforeKoa>();

/** Makes `beforeKoa` see the app's requests first, wherever the app listens. */
export function answerBeforeKoa(app: Koa, beforeKoa: BeforeKoa): void {
  beforeKoaOf.set(app, beforeKoa);
}

/**
 * Connections the kernel keeps waiting for accept() per listening socket. Node's default (511)
 * overflowed under bench:load --flood (up to ~550 connections waiting while the event loop
 * stalled: 3,084 and 646 dropped in two 20 s rounds, each retried by its client a second later;
 * none at 4096); the kernel caps it at net.core.somaxconn.
 */
export const LISTEN_BACKLOG = 4096;

export async function listen(app: Koa, host: string, port: number): Promise<RunningServer> {
  const handler = app.callback();
  const beforeKoa = beforeKoaOf.get(app);
  // Every request's arrival is stamped first: shed answers are timed from it (shedAnswers.ts).
  const server = http.createServer(
    beforeKoa
      ? (req, res) => {
          markArrival(req);
          beforeKoa(req, res, () => void handler(req, res));
        }
      : (req, res) => {
          markArrival(req);
          void handler(req, res);
        },
  );
  // Slow clients must not hold sockets forever.
  server.headersTimeout = 30_000;
  server.requestTimeout = 120_000;
  server.on('clientError', answerClientError);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    server,
    port: address.port,
    url: `http://${shownHost === '0.0.0.0' ? '127.0.0.1' : shownHost}:${address.port}`,
    close: (graceMs = 10_000) => closeServer(server, graceMs),
  };
}

// Requests Node's HTTP parser refuses before the app sees them (a request line or headers over
// the size limit, malformed HTTP, a slow client) still get the contract's JSON error body.
const PARSER_ERRORS: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'headers_too_large', 'The request line or headers are too large.'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'request_timeout', 'The request took too long to arrive.'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'payload_too_large', 'Chunk extensions are too large.'],
};

function answerClientError(error: NodeJS.ErrnoException, socket: Duplex) {
  if (!socket.writable || (socket as { _httpMessage?: unknown })._httpMessage) {
    socket.destroy();
    return;
  }
  const [status, code, message] = PARSER_ERRORS[error.code ?? ''] ?? [
    400,
    'bad_request',
    'Malformed HTTP request.',
  ];
  const body = JSON.stringify({ error: { code, message, details: [] } });
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

function closeServer(server: http.Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const deadline = setTimeout(() => server.closeAllConnections(), graceMs);
    deadline.unref();
    server.close(() => {
      clearTimeout(deadline);
      resolve();
    });
    server.closeIdleConnections();
  });
}
