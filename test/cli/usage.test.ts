import { describe, expect, jest, test } from '@jest/globals';
import type { Command } from 'commander';
import { EXIT } from '../../src/cli/exitCodes.ts';
import { buildProgram } from '../../src/cli/main.ts';
import { runCli } from '../support/cli.ts';

// Every case starts the real command as a child process; on a busy machine each takes seconds.
jest.setTimeout(180_000);

// Usage errors are found before any database is touched; this one would refuse every connection.
const env = { DATABASE_URL: 'postgres://root@127.0.0.1:1/unreachable' };

function commandPaths(command: Command, prefix: string[] = []): string[][] {
  const path = [...prefix, command.name()];
  return [path, ...command.commands.flatMap((sub) => commandPaths(sub, path))];
}

describe('usage errors', () => {
  test.each([
    [['backfill', '--strikt'], "error: unknown option '--strikt'", 'platform backfill'],
    [
      ['token', 'create', '--name', 'x', '--scope', 'admin'],
      "error: option '--scope <scope...>' argument 'admin' is invalid",
      'platform token create',
    ],
    [
      ['token', 'create', '--name', 'two words'],
      "error: option '--name <name>' argument 'two words' is invalid",
      'platform token create',
    ],
    [['backfill'], 'error: give files or directories to load', 'platform backfill'],
    [['export', 'BTC', '--format', 'xml'], 'error: --format', 'platform export'],
    [['heal', '--hours', 'soon'], "error: option '--hours <n>' argument 'soon'", 'platform heal'],
    [['no-such-command'], "error: unknown command 'no-such-command'", 'platform'],
  ])('platform %j: the problem, a hint, exit 2, no help', async (args, problem, command) => {
    const result = await runCli(args, env);
    expect(result.code).toBe(EXIT.usage);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain(problem);
    expect(lines[1]).toBe(`run '${command} --help' for usage`);
  });

  test('arguments with control bytes are echoed escaped', async () => {
    const result = await runCli(['back\x1b[2Jfill\r'], env);
    expect(result.code).toBe(EXIT.usage);
    // eslint-disable-next-line no-control-regex -- no raw control byte may reach the terminal
    expect(result.stderr).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f]/);
    expect(result.stderr).toContain("error: unknown command 'back\\x1b[2Jfill\\x0d'");
  });
});

describe('--help', () => {
  // Every command there is, so one added later is checked too.
  const paths = commandPaths(buildProgram()).map((path) => path.slice(1));

  test.each(paths.map((path) => [path.join(' ') || '(program)', path] as const))(
    'platform %s --help names every exit code the program uses',
    async (_name, path) => {
      const result = await runCli([...path, '--help'], env);
      expect(result.code).toBe(EXIT.ok);
      const block = /\nExit codes:\n((?: {2}\d {2}.*\n(?: {5}.*\n)*)+)/.exec(result.stdout);
      expect(block).not.toBeNull();
      const codes = [...block![1]!.matchAll(/^ {2}(\d) {2}/gm)].map((m) => Number(m[1]));
      expect(codes).toEqual(Object.values(EXIT).sort());
    },
  );
});
