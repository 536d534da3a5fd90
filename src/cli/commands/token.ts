import { InvalidArgumentError, Option, type Command } from 'commander';
import { SCOPES, TOKEN_NAME } from '../../data/tokens/tokenRules.ts';
import { withExamples, withExitCodes } from '../help.ts';
import type { CreateTokenOptions } from './tokenRun.ts';

export function registerTokenCommands(program: Command) {
  const token = withExamples(
    program.command('token').description('Manage the data module service tokens'),
    [
      'platform token create --name analysis --scope read --scope write',
      'platform token list',
      'platform token revoke analysis',
    ],
  );
  withExitCodes(token, {
    ok: 'done',
    failure:
      'create: an active token has that name; revoke: no active token has that name;\n' +
      'any: the database failed',
  });

  const create = withExamples(
    token
      .command('create')
      .description('Create a token and print it once (only its hash is stored)')
      .requiredOption(
        '--name <name>',
        'name of the calling service, e.g. analysis (1 to 64 of A-Z a-z 0-9 . _ -)',
        parseTokenName,
      )
      .addOption(
        new Option('--scope <scope...>', 'scopes the token grants (repeatable)')
          .choices(SCOPES)
          .default(['read']),
      )
      .option('--json', 'print {"name", "scopes", "token"}'),
    [
      'platform token create --name analysis',
      'platform token create --name ingest --scope read --scope write',
      'TOKEN=$(platform token create --name api --json | jq -r .token)',
    ],
    'Names are unique among active tokens; revoke one to reuse its name.',
  );
  withExitCodes(create, {
    ok: 'created; the token is printed',
    failure: 'an active token already has that name, or the database failed',
  }).action(async (options: CreateTokenOptions, command: Command) => {
    const { runCreateToken } = await import('./tokenRun.ts');
    await runCreateToken(options, command);
  });

  const list = withExamples(
    token
      .command('list')
      .description('List active tokens (names and scopes, never the tokens)')
      .option('--json', 'print [{"name", "scopes", "createdAt", "lastUsedAt"}]'),
    ['platform token list', "platform token list --json | jq -r '.[].name'"],
  );
  withExitCodes(list, {
    ok: 'listed (also when there is none)',
    failure: 'the database failed',
  }).action(async (options: { json?: boolean }, command: Command) => {
    const { runListTokens } = await import('./tokenRun.ts');
    await runListTokens(options, command);
  });

  const revoke = withExamples(
    token
      .command('revoke')
      .description('Revoke a token by name; every data instance refuses it within a second')
      .argument('<name>', 'token name')
      .option('--json', 'print {"revoked": name}'),
    ['platform token revoke analysis'],
  );
  withExitCodes(revoke, {
    ok: 'revoked',
    failure: 'no active token has that name, or the database failed',
  }).action(async (name: string, options: { json?: boolean }, command: Command) => {
    const { runRevokeToken } = await import('./tokenRun.ts');
    await runRevokeToken(name, options, command);
  });
}

function parseTokenName(text: string): string {
  if (!TOKEN_NAME.test(text)) throw new InvalidArgumentError('1 to 64 of A-Z a-z 0-9 . _ -');
  return text;
}
