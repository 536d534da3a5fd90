import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { withDefaultUser } from '../../src/shared/config.ts';

// Every test file works in its own database, cloned from a template that globalSetup migrated
// once. Names carry a hash of the checkout's path so parallel checkouts never collide.

export const ADMIN_URL = withDefaultUser(
  process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/postgres',
);
const checkoutHash = createHash('sha256').update(process.cwd()).digest('hex').slice(0, 8);
export const TEMPLATE_DB = `tpl_platform_${checkoutHash}`;
export const TEST_DB_PREFIX = `t_${checkoutHash}_`;

export function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export async function dropDatabase(client: pg.Client, name: string) {
  await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
}

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `${TEST_DB_PREFIX}${randomBytes(5).toString('hex')}`;
  await withAdmin(async (client) => {
    // TimescaleDB's scheduler may have connected to the template; clones need it idle.
    for (let attempt = 0; ; attempt++) {
      try {
        await client.query(
          `CREATE DATABASE ${pg.escapeIdentifier(name)} TEMPLATE ${pg.escapeIdentifier(TEMPLATE_DB)}`,
        );
        return;
      } catch (error) {
        if ((error as { code?: string }).code !== '55006' || attempt >= 20) throw error;
        await client.query(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1',
          [TEMPLATE_DB],
        );
        await new Promise((resolve) => setTimeout(resolve, 100)); // pause before the retry
      }
    }
  });
  return {
    name,
    url: databaseUrl(name),
    drop: () => withAdmin((client) => dropDatabase(client, name)),
  };
}
