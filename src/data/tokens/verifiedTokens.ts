import type { DatabasePool } from 'slonik';
import type { ChangeEvents } from '../../shared/db/changeEvents.ts';
import { hashToken, verifyToken, wellFormedToken, type TokenCaller } from './tokenStore.ts';

/**
 * How long a verified token is believed without asking the database again. Revocation reaches
 * every instance at once through its change notification; this bounds the rare case of a
 * notification lost on a connection not yet known to be dead.
 */
export const TOKEN_CACHE_TTL_MS = 1000;

/** Beyond this many kept tokens the whole memory is dropped (tokens are few; this is a bound). */
const MAX_KEPT = 10_000;

interface Kept {
  caller: TokenCaller;
  generation: number;
  at: number;
}

/**
 * The data module's token checks, kept per process: a token verified once is believed for
 * TOKEN_CACHE_TTL_MS while the process hears no change of service_tokens (a revocation anywhere
 * NOTIFYs every instance: sql/0225_change_events.sql). Without a listening connection every
 * check reads the database, as does every unknown or revoked token (never kept, so a token
 * created a moment ago works at once).
 */
export class VerifiedTokens {
  private readonly kept = new Map<string, Kept>();
  private readonly pool: DatabasePool;
  private readonly events: ChangeEvents | undefined;

  constructor(pool: DatabasePool, events?: ChangeEvents) {
    this.pool = pool;
    this.events = events;
  }

  async verify(token: string): Promise<TokenCaller | null> {
    if (!wellFormedToken(token)) return null;
    const events = this.events;
    if (!events?.isListening) return verifyToken(this.pool, token);
    const key = hashToken(token).toString('base64');
    const generation = events.generation('tokens');
    const now = Date.now();
    const kept = this.kept.get(key);
    if (kept && kept.generation === generation && now - kept.at < TOKEN_CACHE_TTL_MS) {
      return kept.caller;
    }
    const caller = await verifyToken(this.pool, token);
    if (!caller) {
      this.kept.delete(key);
      return null;
    }
    if (this.kept.size >= MAX_KEPT) this.kept.clear();
    // Kept under the generation read before the query: a change heard meanwhile voids it.
    this.kept.set(key, { caller, generation, at: now });
    return caller;
  }
}
