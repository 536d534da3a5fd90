import { sql, type DatabasePool } from 'slonik';
import type { Logger } from '../shared/logger.ts';
import { purgeExpiredSessions, type SessionTimeouts } from './session/sessionStore.ts';

/** Deletes expired sessions and spent login counters (both are already ignored when read). */
export async function sweepExpired(pool: DatabasePool, timeouts: SessionTimeouts) {
  const sessions = await purgeExpiredSessions(pool, timeouts);
  const limits = await pool.query(sql.unsafe`
    DELETE FROM app.login_limits WHERE expire < (extract(epoch FROM now()) * 1000)::bigint
  `);
  return { sessions, loginLimits: limits.rowCount };
}

/** Runs the sweep every `everyMs` in the background; returns the function that stops it. */
export function startSweeper(
  pool: DatabasePool,
  timeouts: SessionTimeouts,
  logger: Logger,
  everyMs = 10 * 60_000,
): () => void {
  const timer = setInterval(() => {
    sweepExpired(pool, timeouts)
      .then((swept) => logger.debug(swept, 'expired sessions swept'))
      .catch((error: unknown) => logger.warn({ err: error }, 'session sweep failed'));
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
