import { InvalidArgumentError, Option, type Command } from 'commander';
import { createDatabasePool } from '../../shared/db/pool.ts';
import {
  createToken,
  listTokens,
  revokeToken,
  SCOPES,
  TOKEN_NAME,
  type Scope,
} from '../../data/tokens/tokenStore.ts';
import { printable } from '../../shared/printable.ts';
import { configFromCommand, printJson } from '../context.ts';
import { withExamples, withExitCodes } from '../help.ts';

async function withPool<T>(
  command: Command,
  work: (pool: Awaited<ReturnType<typeof createDatabasePool>>) => Promise<T>,
) {
  const config = configFromCommand(command);
  const pool = await createDatabasePool(config.DATABASE_URL, { maxPoolSize: 1 });
  try {
    return await work(pool);
  } finally {
    await pool.end();
  }
}

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
  }).action(async (options: { name: string; scope: Scope[]; json?: boolean }, command: Command) => {
    const created = await withPool(command, (pool) =>
      createToken(pool, options.name, options.scope),
    );
    if (options.json)
      return printJson({
        name: created.info.name,
        scopes: created.info.scopes,
        token: created.token,
      });
    process.stdout.write(
      `${created.token}\n` +
        `(token '${printable(created.info.name)}' with scopes ${created.info.scopes.join(', ')}; it will not be shown again)\n`,
    );
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
    const tokens = await withPool(command, (pool) => listTokens(pool));
    if (options.json) return printJson(tokens);
    if (tokens.length === 0) return void process.stdout.write('no active tokens\n');
    for (const t of tokens) {
      process.stdout.write(
        `${printable(t.name).padEnd(24)} ${t.scopes.join(',').padEnd(12)} created ${t.createdAt.toISOString()}` +
          `  last used ${t.lastUsedAt?.toISOString() ?? 'never'}\n`,
      );
    }
  });

  const revoke = withExamples(
    token
      .command('revoke')
      .description('Revoke a token by name; it stops working immediately')
      .argument('<name>', 'token name')
      .option('--json', 'print {"revoked": name}'),
    ['platform token revoke analysis'],
  );
  withExitCodes(revoke, {
    ok: 'revoked',
    failure: 'no active token has that name, or the database failed',
  }).action(async (name: string, options: { json?: boolean }, command: Command) => {
    await withPool(command, (pool) => revokeToken(pool, name));
    if (options.json) return printJson({ revoked: name });
    process.stdout.write(`revoked token '${printable(name)}'\n`);
  });
}

function parseTokenName(text: string): string {
  if (!TOKEN_NAME.test(text)) throw new InvalidArgumentError('1 to 64 of A-Z a-z 0-9 . _ -');
  return text;
}
