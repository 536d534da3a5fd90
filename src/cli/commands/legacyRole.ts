import { randomBytes } from 'node:crypto';
import { InvalidArgumentError, type Command } from 'commander';
import { createLegacyRole, dropLegacyRole, LEGACY_ROLE_NAME } from '../../data/legacy/role.ts';
import { createDatabasePool } from '../../shared/db/pool.ts';
import { configFromCommand, printJson } from '../context.ts';
import { withExamples, withExitCodes } from '../help.ts';

async function withPool(
  command: Command,
  work: (pool: Awaited<ReturnType<typeof createDatabasePool>>) => Promise<void>,
) {
  const config = configFromCommand(command);
  const pool = await createDatabasePool(config.DATABASE_URL, { maxPoolSize: 1 });
  try {
    await work(pool);
  } finally {
    await pool.end();
  }
}

function parseRoleName(text: string): string {
  if (!LEGACY_ROLE_NAME.test(text)) {
    throw new InvalidArgumentError('1 to 63 of a-z 0-9 _, not starting with a digit');
  }
  return text;
}

export function registerLegacyRoleCommands(program: Command) {
  const legacy = withExamples(
    program
      .command('legacy-role')
      .description(
        "Database roles for the old analysis service's SQL (read-only, search_path=legacy)",
      ),
    ['platform legacy-role create analysis', 'platform legacy-role drop analysis'],
  );
  withExitCodes(legacy, {
    ok: 'done',
    failure: 'create: the role exists; drop: no such legacy role; any: the database failed',
  });

  const create = withExamples(
    legacy
      .command('create')
      .description(
        'Create a login role that may read legacy.currencies, legacy.market_snapshots and ' +
          'legacy.predictions and nothing else, with search_path set to legacy',
      )
      .argument('<name>', 'role name (1 to 63 of a-z 0-9 _)', parseRoleName)
      .option('--password <password>', 'its password (default: a random one, printed once)')
      .option('--json', 'print {"name", "password"}'),
    [
      'platform legacy-role create analysis',
      'platform legacy-role create analysis --password "$ANALYSIS_DB_PASSWORD"',
    ],
    'The client connects with its own URL plus `?options=-c%20search_path%3Dlegacy` (the role ' +
      'defaults to that search_path too). Needs a database user that may create roles.',
  );
  withExitCodes(create, {
    ok: 'created',
    failure: 'a role with that name exists, or the database failed',
  }).action(
    async (name: string, options: { password?: string; json?: boolean }, command: Command) => {
      const password = options.password ?? randomBytes(18).toString('base64url');
      await withPool(command, (pool) => createLegacyRole(pool, name, password));
      if (options.json) return printJson({ name, password });
      process.stdout.write(
        options.password
          ? `created role ${name} (search_path=legacy, read-only)\n`
          : `${password}\n(password of role ${name}; it will not be shown again)\n`,
      );
    },
  );

  const drop = withExamples(
    legacy
      .command('drop')
      .description('Drop a role made by legacy-role create (other roles are refused)')
      .argument('<name>', 'role name', parseRoleName)
      .option('--json', 'print {"dropped": name}'),
    ['platform legacy-role drop analysis'],
  );
  withExitCodes(drop, {
    ok: 'dropped',
    failure: 'no such role, not a legacy role, or the database failed',
  }).action(async (name: string, options: { json?: boolean }, command: Command) => {
    await withPool(command, (pool) => dropLegacyRole(pool, name));
    if (options.json) return printJson({ dropped: name });
    process.stdout.write(`dropped role ${name}\n`);
  });
}
