import { randomBytes } from 'node:crypto';
import type Koa from 'koa';
import createSession from 'koa-session';
import type { DatabasePool } from 'slonik';
import { ConfigError, type Config } from '../../shared/config.ts';
import type { Logger } from '../../shared/logger.ts';
import { createSessionStore, type SessionData, type SessionTimeouts } from './sessionStore.ts';

// koa-session 7 does not type ctx.session; this is the shape the API relies on.
declare module 'koa' {
  interface DefaultContext {
    session: (SessionData & KoaSessionMethods) | null;
  }
}

interface KoaSessionMethods {
  readonly isNew: boolean;
  regenerate(): Promise<void> | undefined;
}

export const SESSION_COOKIE = 'sid';

export function sessionTimeouts(config: Config): SessionTimeouts {
  return {
    idleSeconds: config.SESSION_IDLE_MINUTES * 60,
    absoluteSeconds: config.SESSION_ABSOLUTE_HOURS * 3600,
  };
}

/** SESSION_KEYS, or (outside production) a random key for this process, with a warning. */
export function sessionKeys(config: Config, logger: Logger): string[] {
  if (config.SESSION_KEYS) return config.SESSION_KEYS;
  if (config.NODE_ENV === 'production') {
    throw new ConfigError(['SESSION_KEYS: required when NODE_ENV=production']);
  }
  logger.warn(
    'SESSION_KEYS is not set: using a random key, so sign-ins do not survive a restart of the API',
  );
  return [randomBytes(32).toString('base64url')];
}

/**
 * Server-side sessions: the HttpOnly, SameSite=Lax cookie `sid` carries a 256-bit random id
 * (koa-session's default UUID has only 122 random bits), signed with SESSION_KEYS; Secure is set
 * whenever the request came over HTTPS (directly or, with API_TRUST_PROXY, via the proxy). The
 * cookie lives as long as the absolute time-out; the store enforces both time-outs.
 */
export function createSessionMiddleware(
  app: Koa,
  options: {
    pool: DatabasePool;
    timeouts: SessionTimeouts;
    keys: string[];
    /** A session was destroyed (logout, sign-in's new id, one too many): its sockets must end. */
    onSessionEnded?: (idHash: string) => void;
    /** SESSIONS_MAX_PER_USER: a sign-in past it ends the user's oldest session. */
    maxPerUser?: number;
  },
): Koa.Middleware {
  app.keys = options.keys;
  const store = createSessionStore(options.pool, options.timeouts, {
    onDestroyed: options.onSessionEnded,
    maxPerUser: options.maxPerUser,
  });
  return createSession(
    {
      key: SESSION_COOKIE,
      maxAge: options.timeouts.absoluteSeconds * 1000,
      httpOnly: true,
      signed: true,
      sameSite: 'lax',
      rolling: false,
      renew: false,
      genid: () => randomBytes(32).toString('base64url'),
      store: {
        get: (id: string) => store.get(id),
        set: (id: string, data: SessionData) => store.set(id, data),
        destroy: (id: string) => store.destroy(id),
      },
    },
    app,
  ) as Koa.Middleware;
}
