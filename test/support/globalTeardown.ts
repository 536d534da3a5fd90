import pg from 'pg';
import { findSecretsInFile } from '../security/logScan.ts';
import { dropDatabase, TEMPLATE_DB, withAdmin } from './database.ts';
import { removeTestReplica } from './replica.ts';

export default async function globalTeardown() {
  await removeTestReplica();
  await withAdmin(async (client) => {
    await client
      .query(`ALTER DATABASE ${pg.escapeIdentifier(TEMPLATE_DB)} WITH IS_TEMPLATE false`)
      .catch(() => {});
    await dropDatabase(client, TEMPLATE_DB);
  });
  // With TEST_LOG_FILE, every runtime of the run logged there: no secret may be in it.
  const logFile = process.env.TEST_LOG_FILE;
  if (logFile) {
    const found = findSecretsInFile(logFile);
    if (found.length > 0) throw new Error(`secrets in ${logFile}:\n${found.join('\n')}`);
  }
}
