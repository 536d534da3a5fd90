import { createHash } from 'node:crypto';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';

// koa-session's external store, in PostgreSQL. The cookie holds only the session id; the row is
// keyed by its SHA-256. A session is alive while it was used within the idle time-out and began
// within the absolute time-out; both are checked (and the row touched) in the same statement.

export interface SessionTimeouts {
  idleSeconds: number;
  absoluteSeconds: number;
}

export type SessionData = Record<string, unknown> & { userId?: number; csrf?: string };

/** The SHA-256 of a session id in hex: what the table keys it by, and its live sockets' room. */
export const sessionIdHash = (id: string) => createHash('sha256').update(id).digest('hex');

const hashId = (id: string) => sql.binary(Buffer.from(sessionIdHash(id), 'hex'));

export interface SessionStoreOptions {
  /** Told after a session was destroyed (logout, the old id at sign-in, one too many), by id hash. */
  onDestroyed?: (idHash: string) => void;
  /** Signed-in sessions one user may hold; a new one past it ends the oldest (unlimited if unset). */
  maxPerUser?: number;
}

export function createSessionStore(
  pool: DatabasePool,
  timeouts: SessionTimeouts,
  options: SessionStoreOptions = {},
) {
  const { onDestroyed, maxPerUser } = options;
  const idle = sql.fragment`make_interval(secs => ${timeouts.idleSeconds})`;
  const absolute = sql.fragment`make_interval(secs => ${timeouts.absoluteSeconds})`;
  return {
    async get(id: string): Promise<SessionData | null> {
      const data = await pool.maybeOneFirst(sql.type(
        z.object({ data: z.record(z.string(), z.unknown()) }),
      )`
        WITH alive AS (
          UPDATE app.sessions SET last_seen_at = now()
          WHERE id_hash = ${hashId(id)}
            AND last_seen_at > now() - ${idle}
            AND created_at > now() - ${absolute}
          RETURNING data
        ), expired AS (
          DELETE FROM app.sessions
          WHERE id_hash = ${hashId(id)} AND NOT EXISTS (SELECT FROM alive)
        )
        SELECT data FROM alive
      `);
      return data ?? null;
    },

    async set(id: string, data: SessionData): Promise<void> {
      const userId = typeof data.userId === 'number' ? data.userId : null;
      // xmax = 0 only on a row this statement inserted: a new session, not a save of a known one.
      const inserted = await pool.oneFirst(sql.type(z.object({ inserted: z.boolean() }))`
        INSERT INTO app.sessions (id_hash, user_id, data)
        VALUES (${hashId(id)}, ${userId}, ${sql.jsonb(data as never)})
        ON CONFLICT (id_hash) DO UPDATE
          SET data = EXCLUDED.data, user_id = EXCLUDED.user_id, last_seen_at = now()
        RETURNING (xmax = 0) AS inserted
      `);
      if (inserted && userId !== null && maxPerUser !== undefined) {
        const ended = await endOldestSessions(pool, userId, id, maxPerUser);
        for (const idHash of ended) onDestroyed?.(idHash);
      }
    },

    async destroy(id: string): Promise<void> {
      await pool.query(sql.unsafe`DELETE FROM app.sessions WHERE id_hash = ${hashId(id)}`);
      onDestroyed?.(sessionIdHash(id));
    },
  };
}

/**
 * A user signed in once more than allowed: their oldest sessions beyond the newest `max` (the one
 * just made among them) are deleted. Returns their id hashes (hex), whose live sockets must end.
 */
async function endOldestSessions(
  pool: DatabasePool,
  userId: number,
  keptId: string,
  max: number,
): Promise<readonly string[]> {
  return pool.anyFirst(sql.type(z.object({ hash: z.string() }))`
    DELETE FROM app.sessions
    WHERE id_hash IN (
      SELECT id_hash FROM app.sessions
      WHERE user_id = ${userId} AND id_hash <> ${hashId(keptId)}
      ORDER BY created_at DESC, id_hash
      OFFSET ${max - 1}
    )
    RETURNING encode(id_hash, 'hex') AS hash
  `);
}

/** Which of these sessions (by id hash, hex) are alive; read only, so it keeps none alive. */
export async function aliveSessions(
  pool: DatabasePool,
  timeouts: SessionTimeouts,
  idHashes: readonly string[],
): Promise<Set<string>> {
  const alive = await pool.anyFirst(sql.type(z.object({ hash: z.string() }))`
    SELECT encode(id_hash, 'hex') AS hash FROM app.sessions
    WHERE id_hash IN (SELECT decode(h, 'hex') FROM unnest(${sql.array(idHashes, 'text')}) AS h)
      AND last_seen_at > now() - make_interval(secs => ${timeouts.idleSeconds})
      AND created_at > now() - make_interval(secs => ${timeouts.absoluteSeconds})
  `);
  return new Set(alive);
}

/** Deletes sessions past either time-out; the store already refuses them, this reclaims space. */
export async function purgeExpiredSessions(
  pool: DatabasePool,
  timeouts: SessionTimeouts,
): Promise<number> {
  const result = await pool.query(sql.unsafe`
    DELETE FROM app.sessions
    WHERE last_seen_at <= now() - make_interval(secs => ${timeouts.idleSeconds})
       OR created_at <= now() - make_interval(secs => ${timeouts.absoluteSeconds})
  `);
  return result.rowCount;
}
