import type { Command } from 'commander';
import { withExamples, withExitCodes } from '../help.ts';

export function registerMigrateCommand(program: Command) {
  const migrateCommand = program
    .command('migrate')
    .description('Create the database if missing and apply pending SQL migrations from sql/')
    .option('--json', 'print {"database": "created"|"exists", "applied": [names]}');
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
    const { runMigrate } = await import('./migrateRun.ts');
    await runMigrate(options, command);
  });
}
