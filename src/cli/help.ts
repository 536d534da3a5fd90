import type { Command } from 'commander';
import { EXIT, USAGE_MEANING, type ExitMeanings } from './exitCodes.ts';

/** Appends an "Examples:" block (and an optional note) to a command's --help. */
export function withExamples<C extends Command>(command: C, examples: string[], note?: string): C {
  const lines = examples.map((example) => `  $ ${example}`).join('\n');
  return command.addHelpText('after', `${note ? `\n${note}\n` : ''}\nExamples:\n${lines}`);
}

/** Appends the "Exit codes:" block to a command's --help; a meaning may span lines (`\n`). */
export function withExitCodes<C extends Command>(command: C, meanings: ExitMeanings): C {
  const rows: Array<[number, string]> = [
    [EXIT.ok, meanings.ok],
    [EXIT.failure, meanings.failure],
    [EXIT.usage, meanings.usage ?? USAGE_MEANING],
  ];
  const lines = rows
    .map(([code, meaning]) => `  ${code}  ${meaning.replaceAll('\n', '\n     ')}`)
    .join('\n');
  return command.addHelpText('after', `\nExit codes:\n${lines}`);
}
