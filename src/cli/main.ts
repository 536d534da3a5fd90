import { Command, CommanderError } from 'commander';
import { ConfigError } from '../shared/config.ts';
import { AppError } from '../shared/errors.ts';
import { registerBackfillCommand } from './commands/backfill.ts';
import { registerDoctorCommand } from './commands/doctor.ts';
import { registerExportCommand } from './commands/export.ts';
import { registerHealCommand } from './commands/heal.ts';
import { registerMigrateCommand } from './commands/migrate.ts';
import { registerStartCommand } from './commands/start.ts';
import { registerTokenCommands } from './commands/token.ts';
import { EXIT } from './exitCodes.ts';

export { EXIT };

export function buildProgram(): Command {
  const program = new Command('platform')
    .description('Market-data platform: data module, application API, job worker and operations')
    .option(
      '--platform.load.currency <bool>',
      'refresh the currency list from an exchange at start-up (true/false)',
    )
    .showHelpAfterError()
    .exitOverride()
    .addHelpText(
      'after',
      '\nEvery command has --help with examples. Exit codes: 0 success, 1 failure or unhealthy,\n' +
        '2 usage or configuration error. Configuration: environment variables, listed in\n' +
        'docs/configuration.md. Operations: docs/operations.md.',
    );
  registerStartCommand(program);
  registerMigrateCommand(program);
  registerTokenCommands(program);
  registerBackfillCommand(program);
  registerDoctorCommand(program);
  registerExportCommand(program);
  registerHealCommand(program);
  return program;
}

export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (error) {
    process.exitCode = reportFailure(error);
  }
}

function reportFailure(error: unknown): number {
  if (error instanceof CommanderError) {
    return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    return EXIT.usage;
  }
  if (error instanceof AppError) {
    process.stderr.write(`error: ${error.message}\n`);
    return EXIT.failure;
  }
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`error: ${message}\n`);
  return EXIT.failure;
}
