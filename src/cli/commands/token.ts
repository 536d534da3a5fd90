import { Option, type Command } from 'commander';
import { createDatabasePool } from '../../shared/db/pool.ts';
import {
  createToken,
  listTokens,
  revokeToken,
  SCOPES,
  type Scope,
} from '../../data/tokens/tokenStore.ts';
import { configFromCommand, printJson } from '../context.ts';
import { withExamples } from '../help.ts';

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

  withExamples(
    token
      .command('create')
      .description('Create a token and print it once (only its hash is stored)')
      .requiredOption('--name <name>', 'name of the calling service, e.g. analysis')
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
  ).action(async (options: { name: string; scope: Scope[]; json?: boolean }, command: Command) => {
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
        `(token '${created.info.name}' with scopes ${created.info.scopes.join(', ')}; it will not be shown again)\n`,
    );
  });

  withExamples(
    token
      .command('list')
      .description('List active tokens (names and scopes, never the tokens)')
      .option('--json', 'print [{"name", "scopes", "createdAt", "lastUsedAt"}]'),
    ['platform token list', "platform token list --json | jq -r '.[].name'"],
  ).action(async (options: { json?: boolean }, command: Command) => {
    const tokens = await withPool(command, (pool) => listTokens(pool));
    if (options.json) return printJson(tokens);
    if (tokens.length === 0) return void process.stdout.write('no active tokens\n');
    for (const t of tokens) {
      process.stdout.write(
        `${t.name.padEnd(24)} ${t.scopes.join(',').padEnd(12)} created ${t.createdAt.toISOString()}` +
          `  last used ${t.lastUsedAt?.toISOString() ?? 'never'}\n`,
      );
    }
  });

  withExamples(
    token
      .command('revoke')
      .description('Revoke a token by name; it stops working immediately')
      .argument('<name>', 'token name')
      .option('--json', 'print {"revoked": name}'),
    ['platform token revoke analysis'],
    'Exit code 1 when no active token has that name.',
  ).action(async (name: string, options: { json?: boolean }, command: Command) => {
    await withPool(command, (pool) => revokeToken(pool, name));
    if (options.json) return printJson({ revoked: name });
    process.stdout.write(`revoked token '${name}'\n`);
  });
}
