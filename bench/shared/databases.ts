// The benchmarks' databases: each benchmark works in its own database on the benchmark server
// (BENCH_DATABASE_URL, default the local server), created anew and migrated for every run.
import pg from 'pg';
import { withDefaultUser } from '../../src/shared/config.ts';
import { migrate } from '../../src/shared/db/migrate.ts';

const server = new URL(
  withDefaultUser(process.env.BENCH_DATABASE_URL ?? 'postgres://127.0.0.1:5432/postgres'),
);

/** The URL of database `name` on the benchmark server. */
export const benchDatabaseUrl = (name: string) =>
  Object.assign(new URL(server), { pathname: `/${name}` }).toString();

/** Runs `work` on a connection to the server's maintenance database. */
export async function onServer<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: server.toString() });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Drops database `name` if it exists, creates it empty and migrates it; returns its URL. */
export async function recreateDatabase(name: string): Promise<string> {
  await onServer(async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${name}`);
  });
  const url = benchDatabaseUrl(name);
  await migrate(url);
  return url;
}
