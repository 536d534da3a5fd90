import { Command, CommanderError } from 'commander';
import { ConfigError } from '../shared/configError.ts';
import { ValidationError } from '../shared/errors.ts';
import { printable, printableLines } from '../shared/printable.ts';
import { registerBackfillCommand } from './commands/backfill.ts';
import { registerDoctorCommand } from './commands/doctor.ts';
import { registerExportCommand } from './commands/export.ts';
import { registerHealCommand } from './commands/heal.ts';
import { registerLegacyRoleCommands } from './commands/legacyRole.ts';
import { registerMigrateCommand } from './commands/migrate.ts';
import { registerStartCommand } from './commands/start.ts';
import { registerTokenCommands } from './commands/token.ts';
import { EXIT } from './exitCodes.ts';
import { withExitCodes } from './help.ts';

export { EXIT };

export function buildProgram(): Command {
  const program = new Command('platform')
    .description('Market-data platform: data module, application API, job worker and operations')
    .option(
      '--platform.load.currency <bool>',
      'refresh the currency list from an exchange at start-up (true/false)',
    )
    .configureOutput({ outputError: (text, write) => write(oneLine(text)) })
    .exitOverride()
    .addHelpText(
      'after',
      '\nEvery command has --help with examples and its exit codes. Configuration: environment\n' +
        'variables, listed in docs/configuration.md. Operations: docs/operations.md.',
    );
  withExitCodes(program, {
    ok: 'success',
    failure: 'failure or unhealthy (each command says when)',
  });
  registerStartCommand(program);
  registerMigrateCommand(program);
  registerTokenCommands(program);
  registerBackfillCommand(program);
  registerDoctorCommand(program);
  registerExportCommand(program);
  registerHealCommand(program);
  registerLegacyRoleCommands(program);
  for (const command of commandTree(program)) command.showHelpAfterError(usageHint(command));
  program.hook('preAction', (_program, actionCommand) => {
    running = actionCommand;
  });
  return program;
}

/** The command whose action runs, for the hint after a usage error found while it runs. */
let running: Command | undefined;

function* commandTree(command: Command): Generator<Command> {
  yield command;
  for (const sub of command.commands) yield* commandTree(sub);
}

/** The line after a usage error: where the whole story is, instead of all of it. */
function usageHint(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return `run '${names.join(' ')} --help' for usage`;
}

/**
 * A usage error as one line. It may quote the arguments (an unknown option, a bad value), so it is
 * escaped; commander's "(Did you mean …?)" joins the line instead of starting another.
 */
function oneLine(text: string): string {
  return `${text.trimEnd().split('\n').map(printable).join(' ')}\n`;
}

export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (error) {
    process.exitCode = reportFailure(error);
  }
}

/** Messages may quote input (arguments, files, answers of other systems): escaped, always. */
function reportFailure(error: unknown): number {
  if (error instanceof CommanderError) {
    return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  if (error instanceof ConfigError) {
    process.stderr.write(`${printableLines(error.message)}\n`);
    return EXIT.usage;
  }
  // Bad input found once the command runs (a time zone the database does not know, a window that
  // ends before it starts): a usage error like the ones commander finds.
  if (error instanceof ValidationError) {
    process.stderr.write(`error: ${printable(error.message)}\n`);
    if (running) process.stderr.write(`${usageHint(running)}\n`);
    return EXIT.usage;
  }
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`error: ${printableLines(message)}\n`);
  return EXIT.failure;
}
