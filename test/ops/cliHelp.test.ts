import { describe, expect, test } from '@jest/globals';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/main.ts';
import { runCli } from '../support/cli.ts';

// Every command the CLI registers, found by walking the program (so commands added later are
// covered too), answers --help with its usage and examples, and exits 0.

function commandPaths(command: Command, prefix: string[] = []): string[][] {
  return command.commands
    .filter((sub) => sub.name() !== 'help')
    .flatMap((sub) => {
      const path = [...prefix, sub.name()];
      return [path, ...commandPaths(sub, path)];
    });
}

const paths = commandPaths(buildProgram());

test('the program registers the contract commands', () => {
  expect(paths.map((p) => p.join(' '))).toEqual(
    expect.arrayContaining([
      'start',
      'migrate',
      'token',
      'token create',
      'token list',
      'token revoke',
      'doctor',
    ]),
  );
});

describe('--help', () => {
  test('the program itself lists every command and the exit codes', async () => {
    const result = await runCli(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: platform /);
    for (const [name] of paths) expect(result.stdout).toContain(name);
    expect(result.stdout).toMatch(/Exit codes:\n {2}0 {2}success\n {2}1 {2}failure/);
  });

  test.each(paths.map((path) => path.join(' ')))(
    'platform %s --help shows usage and examples, exit 0',
    async (name) => {
      const result = await runCli([...name.split(' '), '--help']);
      expect(result.code).toBe(0);
      expect(result.stderr).toBe('');
      expect(result.stdout).toMatch(new RegExp(`^Usage: platform ${name}`));
      expect(result.stdout).toMatch(/\nExamples:\n {2}\$ platform /);
    },
  );
});

describe('exit codes', () => {
  test('usage errors exit 2 with the reason on stderr', async () => {
    const unknownOption = await runCli(['doctor', '--no-such-option']);
    expect(unknownOption.code).toBe(2);
    expect(unknownOption.stderr).toMatch(/unknown option '--no-such-option'/);
    const badRole = await runCli(['start', '--role', 'everything']);
    expect(badRole.code).toBe(2);
    expect(badRole.stderr).toMatch(/Allowed choices are all, data/);
  });

  test('a bad configuration exits 2 before doing anything', async () => {
    const result = await runCli(['migrate'], { SHUTDOWN_GRACE_SECONDS: '-5' });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/SHUTDOWN_GRACE_SECONDS/);
  });
});
