import {
  sql,
  UniqueIntegrityConstraintViolationError,
  type DatabasePool,
  type DatabaseTransactionConnection,
} from 'slonik';
import { z } from 'zod';
import { ConflictError } from '../../shared/errors.ts';

export interface NewUser {
  email: string;
  username: string;
  passwordHash: string;
}

const credentialsRow = z.object({ id: z.number(), passwordHash: z.string() });

/** Which of email and username are already taken (case-insensitively). */
async function takenFields(
  db: DatabasePool | DatabaseTransactionConnection,
  user: Pick<NewUser, 'email' | 'username'>,
) {
  const row = await db.one(sql.type(z.object({ email: z.boolean(), username: z.boolean() }))`
    SELECT EXISTS (SELECT FROM app.users WHERE lower(email) = lower(${user.email})) AS email,
           EXISTS (SELECT FROM app.users WHERE lower(username) = lower(${user.username})) AS username
  `);
  return (['email', 'username'] as const).filter((field) => row[field]);
}

function takenError(fields: readonly string[]) {
  return new ConflictError(
    `The ${fields.join(' and ')} ${fields.length > 1 ? 'are' : 'is'} already taken`,
    'account_exists',
    fields.map((field) => ({ path: `body.${field}`, message: 'already taken' })),
  );
}

/** 409 naming the fields when email or username is taken (checked before hashing a password). */
export async function assertAvailable(
  pool: DatabasePool,
  user: Pick<NewUser, 'email' | 'username'>,
): Promise<void> {
  const taken = await takenFields(pool, user);
  if (taken.length > 0) throw takenError(taken);
}

/** Creates the user and its (empty) portfolio; 409 when a concurrent sign-up took the names. */
export async function createUser(pool: DatabasePool, user: NewUser): Promise<number> {
  try {
    return await pool.transaction(async (tx) => {
      const id = await tx.oneFirst(sql.type(z.object({ id: z.number() }))`
        INSERT INTO app.users (email, username, password_hash)
        VALUES (${user.email}, ${user.username}, ${user.passwordHash})
        RETURNING id
      `);
      await tx.query(sql.unsafe`INSERT INTO app.portfolios (user_id) VALUES (${id})`);
      return id;
    });
  } catch (error) {
    // Two sign-ups racing for the same name: the unique index decides, the answer is the same.
    if (error instanceof UniqueIntegrityConstraintViolationError) {
      const raced = await takenFields(pool, user);
      throw takenError(raced.length > 0 ? raced : ['email']);
    }
    throw error;
  }
}

export async function findCredentials(pool: DatabasePool, email: string) {
  return pool.maybeOne(sql.type(credentialsRow)`
    SELECT id, password_hash AS "passwordHash" FROM app.users WHERE lower(email) = lower(${email})
  `);
}

export async function updatePasswordHash(pool: DatabasePool, userId: number, hash: string) {
  await pool.query(sql.unsafe`UPDATE app.users SET password_hash = ${hash} WHERE id = ${userId}`);
}

const profileRow = z.object({
  id: z.number(),
  username: z.string(),
  email: z.string(),
  hasProfilePicture: z.boolean(),
});
export type UserProfile = z.infer<typeof profileRow>;

/** The signed-in user's own account, for the web client's header. */
export async function profileOf(pool: DatabasePool, userId: number): Promise<UserProfile | null> {
  return pool.maybeOne(sql.type(profileRow)`
    SELECT u.id, u.username, u.email,
           EXISTS (SELECT FROM app.profile_pictures p WHERE p.user_id = u.id) AS "hasProfilePicture"
    FROM app.users u WHERE u.id = ${userId}
  `);
}
