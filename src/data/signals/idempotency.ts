import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import { sql, type CommonQueryMethods, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { UnprocessableError } from '../../shared/errors.ts';

// Idempotency keys of the signal writes (sql/0180_idempotency_keys.sql). A client that lost an
// answer retries with the same Idempotency-Key and gets the original answer, status and body,
// without a second write. The key row is claimed in the transaction of the write, so concurrent
// retries queue on it: exactly one writes, the others replay what it answered.

export const IDEMPOTENCY_KEY_HOURS = 24;

/** Expired keys deleted by each keyed write: enough to outpace the one key it adds. */
const CLEANUP_BATCH = 100;

export const idempotencyHeaders = z.object({
  'Idempotency-Key': z
    .string()
    .min(1)
    .max(255)
    .regex(/^[\x21-\x7e]+$/, 'must be 1 to 255 visible ASCII characters')
    .optional()
    .meta({
      description:
        'A unique key per logical request (a UUID, say). A retry with the same key and body ' +
        `within ${IDEMPOTENCY_KEY_HOURS} hours gets the original answer (header ` +
        '`Idempotent-Replayed: true`) and writes nothing; the same key with another body or ' +
        'route is a 422 (`idempotency_key_reused`). Keys are per token (or per address for ' +
        'trusted networks).',
      example: '7d1f0a52-6a52-4a4e-9d43-3c1c3f7bd2a1',
    }),
});

/** What a write answers; kept with its key and replayed to retries. */
export interface WriteAnswer {
  status: number;
  body: unknown;
}

/** Whose keys these are: a token's keys are its own; trusted callers are told apart by address. */
function scopeOf(ctx: Context): string {
  const caller = ctx.state.caller as { name: string } | undefined;
  if (!caller || caller.name === 'trusted-network') return `address:${ctx.request.ip}`;
  return `token:${caller.name}`;
}

function fingerprint(operation: string, payload: unknown): Buffer {
  return createHash('sha256')
    .update(operation)
    .update('\n')
    .update(JSON.stringify(payload))
    .digest();
}

const storedAnswer = z.object({
  sameRequest: z.boolean(),
  status: z.number().nullable(),
  answer: z.unknown(),
});

function reused(key: string): UnprocessableError {
  return new UnprocessableError(
    `Idempotency-Key '${key}' was already used for a different request; send a new key for a ` +
      'new request',
    'idempotency_key_reused',
    [{ path: 'headers.Idempotency-Key', message: 'already used with another body or route' }],
  );
}

function respond(ctx: Context, answer: WriteAnswer) {
  ctx.status = answer.status;
  ctx.body = answer.body;
}

/**
 * Runs a write under the request's Idempotency-Key, if it has one. `payload` is what identifies
 * the request (its parsed body); `write` gets the connection to write with and returns the
 * answer. A write that throws keeps no key, so its retry is tried afresh.
 */
export async function writeOnce(
  ctx: Context,
  pool: DatabasePool,
  request: { operation: string; key: string | undefined; payload: unknown },
  write: (db: CommonQueryMethods) => Promise<WriteAnswer>,
): Promise<void> {
  const { operation, key, payload } = request;
  if (key === undefined) {
    respond(ctx, await write(pool));
    return;
  }
  const scope = scopeOf(ctx);
  const hash = fingerprint(operation, payload);
  const ttl = sql.fragment`make_interval(hours => ${IDEMPOTENCY_KEY_HOURS})`;
  const outcome = await pool.transaction(async (tx) => {
    // Waits while another transaction holds the same key; takes over an expired one.
    const claimed = await tx.maybeOneFirst(sql.type(z.object({ claimed: z.boolean() }))`
      INSERT INTO idempotency_keys (scope, key, operation, request_hash)
      VALUES (${scope}, ${key}, ${operation}, ${sql.binary(hash)})
      ON CONFLICT (scope, key) DO UPDATE
        SET operation = excluded.operation, request_hash = excluded.request_hash,
            status = NULL, answer = NULL, created_at = now()
        WHERE idempotency_keys.created_at < now() - ${ttl}
      RETURNING true AS claimed
    `);
    if (!claimed) {
      const stored = await tx.one(sql.type(storedAnswer)`
        SELECT operation = ${operation} AND request_hash = ${sql.binary(hash)} AS "sameRequest",
               status, answer
        FROM idempotency_keys WHERE scope = ${scope} AND key = ${key}
      `);
      if (!stored.sameRequest || stored.status === null) throw reused(key);
      return { replayed: true, answer: { status: stored.status, body: stored.answer } };
    }
    const answer = await write(tx);
    await tx.query(sql.unsafe`
      UPDATE idempotency_keys
      SET status = ${answer.status}, answer = ${sql.jsonb(answer.body as never)}
      WHERE scope = ${scope} AND key = ${key}
    `);
    await tx.query(sql.unsafe`
      DELETE FROM idempotency_keys
      WHERE (scope, key) IN (
        SELECT scope, key FROM idempotency_keys
        WHERE created_at < now() - ${ttl}
        LIMIT ${CLEANUP_BATCH}
        FOR UPDATE SKIP LOCKED)
    `);
    return { replayed: false, answer };
  });
  if (outcome.replayed) ctx.set('Idempotent-Replayed', 'true');
  respond(ctx, outcome.answer);
}
