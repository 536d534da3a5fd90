import type { Command } from 'commander';
import { ensureDatabase } from '../../shared/db/ensureDatabase.ts';
import { migrate } from '../../shared/db/migrate.ts';
import { createLogger, redactDsn } from '../../shared/logger.ts';
import { configSchema } from '../../shared/config.ts';
import { configFromCommand, printJson } from '../context.ts';

/** `platform migrate`, loaded only when the command runs (keeps the CLI's start-up light). */
export async function runMigrate(options: { json?: boolean }, command: Command) {
  const config = configFromCommand(command, configSchema);
  const logger = createLogger(config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL);
  const database = await ensureDatabase(config.DATABASE_URL);
  const { applied } = await migrate(config.DATABASE_URL, logger);
  if (options.json) return printJson({ database, applied });
  if (database === 'created')
    process.stdout.write(`created database ${redactDsn(config.DATABASE_URL)}\n`);
  process.stdout.write(
    applied.length
      ? `applied ${applied.length} migration(s): ${applied.join(', ')}\n`
      : 'database is up to date\n',
  );
}
