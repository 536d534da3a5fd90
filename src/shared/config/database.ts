import { userInfo } from 'node:os';
import { z } from 'zod';
import { commaList, positiveInt } from './fields.ts';

// Configuration: the database and its replicas. The one section a file backfill reads (with
// the observability one): it must not pay for building the rest of the schema before its first row.

const postgresUrl = z.url({ protocol: /^postgres(ql)?$/ });

/**
 * Like libpq, connect as PGUSER or the operating-system user when the URL names no user
 * (node-postgres would otherwise rely on $USER, which services and CI often lack).
 */
export function withDefaultUser(url: string): string {
  const parsed = new URL(url);
  if (parsed.username) return url;
  parsed.username = process.env.PGUSER ?? userInfo().username;
  return parsed.toString();
}

export const databaseSection = z.object({
  DATABASE_URL: postgresUrl
    .default('postgres://127.0.0.1:5432/platform')
    .transform(withDefaultUser)
    .describe('PostgreSQL/TimescaleDB connection string; the database is created if missing.'),
  READ_DATABASE_URL: commaList
    .pipe(z.array(postgresUrl.transform(withDefaultUser)).min(1))
    .optional()
    .describe(
      'Comma-separated connection strings of physical streaming replicas of DATABASE_URL: history, ' +
        'candles, export and the signal read-backs read from them (writes, tokens, sessions, jobs, ' +
        'the snapshot built once per change, and read-your-writes stay on DATABASE_URL). Unset: ' +
        'every read goes to DATABASE_URL.',
    ),
  REPLICA_MAX_LAG_SECONDS: z.coerce
    .number()
    .min(0)
    .max(3600)
    .default(10)
    .describe(
      'A replica further behind the primary than this (measured from WAL positions, so right when ' +
        'the primary is idle), or unreachable, is left aside and DATABASE_URL answers until it catches up.',
    ),
  REPLICA_CONNECT_TIMEOUT_MS: positiveInt
    .default(1000)
    .describe(
      'Longest wait for a new connection to a replica (ms); past it the read goes to DATABASE_URL.',
    ),
  DATABASE_STATEMENT_TIMEOUT_MS: positiveInt
    .default(30_000)
    .describe(
      'Longest SQL statement (ms): the server cancels it, and the client gives up on its connection 1 s later (a database that stopped answering).',
    ),
  DATABASE_POOL_SIZE: z.coerce
    .number()
    .int()
    .min(2)
    .max(1000)
    .default(10)
    .describe(
      'Connections of the main database pool: health, sign-in, sessions, tokens, snapshots and writes.',
    ),
  DATABASE_READ_POOL_SIZE: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(8)
    .describe(
      'Connections of the separate pool for expensive reads (history, candles, export), so those never make health, sign-in, tokens or writes wait.',
    ),
  DATABASE_CONNECT_TIMEOUT_MS: positiveInt
    .default(5000)
    .describe('Longest wait for a new database connection (ms).'),
});

export type DatabaseConfig = z.infer<typeof databaseSection>;
