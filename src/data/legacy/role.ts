import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { ConflictError, NotFoundError } from '../../shared/errors.ts';

// The database role of the old analysis service: it may log in, read the legacy schema's
// relations (search_path set to it) and nothing else. Roles are cluster-wide; the grants are on
// the platform's database. The password goes to the server as a SCRAM-SHA-256 verifier, so the
// clear text never appears in a statement (nor in a server log of statements).

/** The relations the role may read: what the client's SQL names. */
const READABLE = ['currencies', 'market_snapshots', 'predictions'];

const exists = (pool: DatabasePool, name: string) =>
  pool.exists(sql.unsafe`SELECT 1 FROM pg_roles WHERE rolname = ${name}`);

/** A SCRAM-SHA-256 verifier as PostgreSQL stores it (RFC 5802/7677, 4096 iterations). */
export function scramVerifier(password: string, salt = randomBytes(16)): string {
  const salted = pbkdf2Sync(password.normalize('NFKC'), salt, 4096, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$4096:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

export async function createLegacyRole(
  pool: DatabasePool,
  name: string,
  password: string,
): Promise<void> {
  if (await exists(pool, name)) {
    throw new ConflictError(`A role named ${name} already exists`, 'role_exists');
  }
  const role = sql.identifier([name]);
  const database = await pool.oneFirst(sql.type(z.object({ db: z.string() }))`
    SELECT current_database() AS db
  `);
  await pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`
      CREATE ROLE ${role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
        PASSWORD ${sql.literalValue(scramVerifier(password))}
    `);
    await tx.query(sql.unsafe`GRANT CONNECT ON DATABASE ${sql.identifier([database])} TO ${role}`);
    await tx.query(sql.unsafe`GRANT USAGE ON SCHEMA legacy TO ${role}`);
    await tx.query(sql.unsafe`
      GRANT SELECT ON ${sql.join(
        READABLE.map((relation) => sql.identifier(['legacy', relation])),
        sql.fragment`, `,
      )} TO ${role}
    `);
    await tx.query(sql.unsafe`ALTER ROLE ${role} SET search_path = legacy`);
  });
}

/** Drops a role this module made; any other role (the platform's own, a superuser) is refused. */
export async function dropLegacyRole(pool: DatabasePool, name: string): Promise<void> {
  if (!(await exists(pool, name))) {
    throw new NotFoundError(`No role named ${name}`, 'role_not_found');
  }
  const isLegacy = await pool.exists(sql.unsafe`
    SELECT 1 FROM pg_roles
    WHERE rolname = ${name} AND NOT rolsuper AND NOT rolcreaterole AND NOT rolcreatedb
      AND 'search_path=legacy' = ANY (rolconfig)
  `);
  if (!isLegacy) {
    throw new ConflictError(
      `${name} is not a legacy role (made by legacy-role create)`,
      'not_legacy',
    );
  }
  const role = sql.identifier([name]);
  const database = await pool.oneFirst(sql.type(z.object({ db: z.string() }))`
    SELECT current_database() AS db
  `);
  await pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`REVOKE ALL ON ALL TABLES IN SCHEMA legacy FROM ${role}`);
    await tx.query(sql.unsafe`REVOKE ALL ON SCHEMA legacy FROM ${role}`);
    await tx.query(sql.unsafe`REVOKE ALL ON DATABASE ${sql.identifier([database])} FROM ${role}`);
    await tx.query(sql.unsafe`DROP ROLE ${role}`);
  });
}
