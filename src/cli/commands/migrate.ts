import type { Command } from 'commander';
import { ensureDatabase } from '../../shared/db/ensureDatabase.ts';
import { migrate } from '../../shared/db/migrate.ts';
import { createLogger, redactDsn } from '../../shared/logger.ts';
import { configFromCommand, printJson } from '../context.ts';
import { withExamples, withExitCodes } from '../help.ts';

export function registerMigrateCommand(program: Command) {
  const migrateCommand = program
    .command('migrate')
    .description('Create the database if missing and apply pending SQL migrations from sql/')
    .option('--json', 'print {"database": "created"|"existing", "applied": [names]}');
  withExamples(
    migrateCommand,
    [
      'platform migrate',
      'platform migrate --json',
      'DATABASE_URL=postgres://platform:secret@db:5432/platform platform migrate',
    ],
    'Safe to run from several processes at once: an advisory lock makes the others wait.',
  );
  withExitCodes(migrateCommand, {
    ok: 'the database is up to date (created and migrated as needed)',
    failure: 'the database is unreachable, cannot be created, or a migration failed',
  }).action(async (options: { json?: boolean }, command: Command) => {
    const config = configFromCommand(command);
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
  });
}
