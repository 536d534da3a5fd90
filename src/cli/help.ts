import type { Command } from 'commander';

/** Appends an "Examples:" block (and an optional note) to a command's --help. */
export function withExamples<C extends Command>(command: C, examples: string[], note?: string): C {
  const lines = examples.map((example) => `  $ ${example}`).join('\n');
  return command.addHelpText('after', `${note ? `\n${note}\n` : ''}\nExamples:\n${lines}`);
}
