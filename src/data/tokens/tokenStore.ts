import { createHash, randomBytes } from 'node:crypto';
import { sql, UniqueIntegrityConstraintViolationError, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { ConflictError, NotFoundError } from '../../shared/errors.ts';
import { SCOPES, type Scope } from './tokenRules.ts';

const TOKEN_PREFIX = 'pdt_';

export const tokenInfoSchema = z.object({
  name: z.string(),
  scopes: z.array(z.enum(SCOPES)),
  createdAt: z.date(),
  lastUsedAt: z.date().nullable(),
});
export type TokenInfo = z.infer<typeof tokenInfoSchema>;

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** Creates a token and returns it in clear: the only time it is ever visible. */
export async function createToken(
  pool: DatabasePool,
  name: string,
  scopes: readonly Scope[],
): Promise<{ token: string; info: TokenInfo }> {
  const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
  const uniqueScopes = [...new Set(scopes)].sort();
  try {
    const info = await pool.one(sql.type(tokenInfoSchema)`
      INSERT INTO service_tokens (name, token_hash, scopes)
      VALUES (${name}, ${sql.binary(hashToken(token))}, ${sql.array(uniqueScopes, 'text')})
      RETURNING name, scopes, created_at AS "createdAt", last_used_at AS "lastUsedAt"
    `);
    return { token, info };
  } catch (error) {
    if (error instanceof UniqueIntegrityConstraintViolationError) {
      throw new ConflictError(
        `A token named '${name}' already exists; revoke it first`,
        'token_exists',
      );
    }
    throw error;
  }
}

export async function listTokens(pool: DatabasePool): Promise<readonly TokenInfo[]> {
  return pool.any(sql.type(tokenInfoSchema)`
    SELECT name, scopes, created_at AS "createdAt", last_used_at AS "lastUsedAt"
    FROM service_tokens WHERE revoked_at IS NULL ORDER BY name
  `);
}

export async function revokeToken(pool: DatabasePool, name: string): Promise<void> {
  const revoked = await pool.query(sql.unsafe`
    UPDATE service_tokens SET revoked_at = now() WHERE name = ${name} AND revoked_at IS NULL
  `);
  if (revoked.rowCount === 0)
    throw new NotFoundError(`No active token named '${name}'`, 'token_not_found');
}

export interface TokenCaller {
  name: string;
  scopes: Scope[];
}

/** Whether `token` can be a token at all (anything else is refused without a query). */
export function wellFormedToken(token: string): boolean {
  return token.startsWith(TOKEN_PREFIX) && token.length <= 200;
}

/**
 * The token's name and scopes when it is known and not revoked; null otherwise. Read from the
 * database every time: the guard keeps answers for a moment (src/data/tokens/verifiedTokens.ts).
 */
export async function verifyToken(pool: DatabasePool, token: string): Promise<TokenCaller | null> {
  if (!wellFormedToken(token)) return null;
  // A plain read; last_used_at is written at most once a minute, in a second statement only then
  // (a data-modifying CTE on every check cost twice the plain read).
  const row = await pool.maybeOne(sql.type(
    z.object({
      id: z.number(),
      name: z.string(),
      scopes: z.array(z.enum(SCOPES)),
      touchDue: z.boolean(),
    }),
  )`
    SELECT id, name, scopes,
           coalesce(last_used_at < now() - interval '1 minute', true) AS "touchDue"
    FROM service_tokens
    WHERE token_hash = ${sql.binary(hashToken(token))} AND revoked_at IS NULL
  `);
  if (row?.touchDue) {
    await pool.query(sql.unsafe`
      UPDATE service_tokens SET last_used_at = now()
      WHERE id = ${row.id} AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
    `);
  }
  return row ? { name: row.name, scopes: [...row.scopes] } : null;
}
