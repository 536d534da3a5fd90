import { InvalidArgumentError, type Command } from 'commander';
import { LEGACY_ROLE_NAME } from '../../data/legacy/roleName.ts';
import { withExamples, withExitCodes } from '../help.ts';
import type { CreateRoleOptions } from './legacyRoleRun.ts';

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
  }).action(async (name: string, options: CreateRoleOptions, command: Command) => {
    const { runCreateLegacyRole } = await import('./legacyRoleRun.ts');
    await runCreateLegacyRole(name, options, command);
  });

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
    const { runDropLegacyRole } = await import('./legacyRoleRun.ts');
    await runDropLegacyRole(name, options, command);
  });
}
