import pg from 'pg';
import { dropDatabase, TEMPLATE_DB, withAdmin } from './database.ts';

export default async function globalTeardown() {
  await withAdmin(async (client) => {
    await client
      .query(`ALTER DATABASE ${pg.escapeIdentifier(TEMPLATE_DB)} WITH IS_TEMPLATE false`)
      .catch(() => {});
    await dropDatabase(client, TEMPLATE_DB);
  });
}
