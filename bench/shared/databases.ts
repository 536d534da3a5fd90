// The benchmarks' databases: each benchmark works in its own database on the benchmark server
// (BENCH_DATABASE_URL, default the local server), created anew for every run. On a shared server,
// BENCH_DB_NAME_PREFIX (e.g. `alice_`) goes before every name, so two people running the same
// benchmark never drop each other's database.
import pg from 'pg';
import { withDefaultUser } from '../../src/shared/config.ts';
import { migrate } from '../../src/shared/db/migrate.ts';

const server = new URL(
  withDefaultUser(process.env.BENCH_DATABASE_URL ?? 'postgres://127.0.0.1:5432/postgres'),
);
const NAME_PREFIX = process.env.BENCH_DB_NAME_PREFIX ?? '';

const quotedName = (name: string) => pg.escapeIdentifier(`${NAME_PREFIX}${name}`);

/** The URL of database `name` on the benchmark server. */
export const benchDatabaseUrl = (name: string) =>
  Object.assign(new URL(server), { pathname: `/${NAME_PREFIX}${name}` }).toString();

/** Runs `work` on a connection to the server's maintenance database. */
async function onServer<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: server.toString() });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Drops database `name` if it exists and creates it empty (not migrated); returns its URL. */
export async function createEmptyDatabase(name: string): Promise<string> {
  await onServer(async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${quotedName(name)} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${quotedName(name)}`);
  });
  return benchDatabaseUrl(name);
}

/** Drops database `name` if it exists, creates it empty and migrates it; returns its URL. */
export async function recreateDatabase(name: string): Promise<string> {
  const url = await createEmptyDatabase(name);
  await migrate(url);
  return url;
}

/** Drops database `name` (connections to it are ended) if it exists. */
export async function dropBenchDatabase(name: string): Promise<void> {
  await onServer((client) =>
    client.query(`DROP DATABASE IF EXISTS ${quotedName(name)} WITH (FORCE)`),
  );
}
