import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { migrate } from '../../src/shared/db/migrate.ts';
import { ensureTimescale } from '../../src/shared/provision.ts';
import {
  ADMIN_URL,
  databaseUrl,
  dropDatabase,
  TEMPLATE_DB,
  TEST_DB_PREFIX,
  withAdmin,
} from './database.ts';
import { prepareReplicaState } from './replica.ts';

/** Builds the migrated template database that every test file clones. */
export default async function globalSetup() {
  // The worker processes tests start must not heal gaps on their own (from a real exchange, into
  // the data a test counts); the heal tests call the healer directly.
  process.env.HEAL_LOOKBACK_HOURS = '0';
  // Nor load a month of simulated history into every fresh test database they start on.
  process.env.SIMULATED_HISTORY_DAYS = '0';
  // The streaming replica is made by the first test that needs one (test/support/replica.ts).
  await prepareReplicaState(mkdtempSync(join(tmpdir(), 'platform-test-run-')));
  // The suite needs TimescaleDB, provisioned here exactly as `npm start` does it: nothing happens
  // on a provisioned server; as root on Debian a fresh one is provisioned (PostgreSQL restarts
  // once); elsewhere this stops with the command to run.
  await ensureTimescale(ADMIN_URL, {
    log: (message) => process.stderr.write(`\nglobal setup: ${message}\n`),
  });
  await withAdmin(async (client) => {
    const leftovers = await client.query<{ datname: string; datistemplate: boolean }>(
      `SELECT datname, datistemplate FROM pg_database WHERE datname LIKE $1 OR datname = $2`,
      [`${TEST_DB_PREFIX}%`, TEMPLATE_DB],
    );
    for (const { datname, datistemplate } of leftovers.rows) {
      // Only a template needs un-marking; ALTER on an "invalid" database (a drop cut short by a
      // server restart) is a FATAL error that ends the session, while DROP still works.
      if (datistemplate) {
        await client.query(`ALTER DATABASE ${pg.escapeIdentifier(datname)} WITH IS_TEMPLATE false`);
      }
      await dropDatabase(client, datname);
    }
    await client.query(`CREATE DATABASE ${pg.escapeIdentifier(TEMPLATE_DB)}`);
  });
  await migrate(databaseUrl(TEMPLATE_DB));
  await withAdmin(async (client) => {
    const name = pg.escapeIdentifier(TEMPLATE_DB);
    await client.query(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS false IS_TEMPLATE true`);
    await client.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1',
      [TEMPLATE_DB],
    );
  });
}
