import type { IncomingMessage } from 'node:http';
import Keygrip from 'keygrip';
import type { DatabasePool } from 'slonik';
import { SESSION_COOKIE } from '../session/sessionMiddleware.ts';
import {
  createSessionStore,
  sessionIdHash,
  type SessionTimeouts,
} from '../session/sessionStore.ts';

// Who is connecting: the same signed `sid` cookie and session store as the HTTP routes, checked
// at the Socket.IO handshake; the gateway then ends the connection when the session ends. koa's cookies sign `name=value` with the keygrip of
// SESSION_KEYS into `name.sig`; any key of the list verifies (rotation), as in koa.

export interface HandshakeIdentity {
  userId: number;
  /** SHA-256 of the session id (hex): the live connection ends with that session. */
  sessionHash: string;
}

function parseCookies(header: string | undefined): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    if (!cookies.has(name)) cookies.set(name, part.slice(eq + 1).trim());
  }
  return cookies;
}

export function createHandshakeIdentity(options: {
  pool: DatabasePool;
  timeouts: SessionTimeouts;
  keys: string[];
}) {
  const keygrip = new Keygrip(options.keys);
  const store = createSessionStore(options.pool, options.timeouts);
  /** The signed-in user of the request's session, or undefined (anonymous, forged, expired). */
  return async function identify(request: IncomingMessage): Promise<HandshakeIdentity | undefined> {
    const cookies = parseCookies(request.headers.cookie);
    const sessionId = cookies.get(SESSION_COOKIE);
    const signature = cookies.get(`${SESSION_COOKIE}.sig`);
    if (!sessionId || !signature) return undefined;
    if (keygrip.index(`${SESSION_COOKIE}=${sessionId}`, signature) < 0) return undefined;
    const session = await store.get(sessionId);
    const userId = session?.userId;
    return typeof userId === 'number'
      ? { userId, sessionHash: sessionIdHash(sessionId) }
      : undefined;
  };
}

/**
 * Cross-site WebSocket hijacking defence (ASVS 4.4.2): a browser always sends Origin with the
 * handshake; it must be our own origin or one of API_ALLOWED_ORIGINS. Clients without Origin
 * are not browsers, which no foreign page can drive.
 */
export function originAllowed(request: IncomingMessage, allowedOrigins: readonly string[]) {
  const origin = request.headers.origin;
  if (!origin) return true;
  if (allowedOrigins.includes(origin)) return true;
  try {
    return new URL(origin).host === request.headers.host;
  } catch {
    return false;
  }
}
