import type { Namespace } from 'socket.io';
import type { DatabasePool } from 'slonik';
import type { Logger } from '../../shared/logger.ts';
import { aliveSessions, type SessionTimeouts } from '../session/sessionStore.ts';

// Signed-in connections end with their session: each sits in the room of its session, which is
// emptied on every instance when the session is destroyed, and each instance looks now and then
// for sessions that expired (idle, absolute) or were deleted without a word.

const SESSION_ROOM = 'session:';

export const sessionRoom = (idHash: string) => SESSION_ROOM + idHash;

/** Ends the session's connections on every instance (through the adapter). */
export function endSessionConnections(nsp: Namespace, idHash: string): void {
  nsp.in(sessionRoom(idHash)).disconnectSockets(true);
}

export interface SessionExpiryOptions {
  /** The namespace while the gateway is attached. */
  namespace: () => Namespace | undefined;
  pool: DatabasePool;
  timeouts: SessionTimeouts;
  logger: Logger;
}

/** Checks every `ms` that the sessions of this instance's connections still live; one at a time. */
export function checkSessionsEvery(ms: number, options: SessionExpiryOptions): NodeJS.Timeout {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    void endExpiredSessions(options).finally(() => (running = false));
  }, ms);
  timer.unref();
  return timer;
}

/** Ends this instance's connections whose session expired or was deleted. */
async function endExpiredSessions({ namespace, pool, timeouts, logger }: SessionExpiryOptions) {
  const nsp = namespace();
  if (!nsp) return;
  const hashes: string[] = [];
  for (const room of nsp.adapter.rooms.keys()) {
    if (room.startsWith(SESSION_ROOM)) hashes.push(room.slice(SESSION_ROOM.length));
  }
  if (hashes.length === 0) return;
  try {
    const alive = await aliveSessions(pool, timeouts, hashes);
    const ended = hashes.filter((hash) => !alive.has(hash)).map(sessionRoom);
    if (ended.length > 0) nsp.local.in(ended).disconnectSockets(true);
  } catch (error) {
    // The database is away: keep the connections rather than drop every signed-in user.
    logger.warn({ err: error }, 'live: could not check sessions');
  }
}
