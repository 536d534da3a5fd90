import { Option, type Command } from 'commander';
import { sql } from 'slonik';
import { startApiRole } from '../../api/start.ts';
import { startDataRole } from '../../data/start.ts';
import { startWorkerRole } from '../../worker/start.ts';
import { createToken, revokeToken } from '../../data/tokens/tokenStore.ts';
import type { Config } from '../../shared/config.ts';
import { ensureDatabase } from '../../shared/db/ensureDatabase.ts';
import { migrate } from '../../shared/db/migrate.ts';
import { createLogger, type Logger } from '../../shared/logger.ts';
import { runProvisioning, serverExtensionState } from '../../shared/provision.ts';
import type { RoleHandle } from '../../shared/roles.ts';
import { createRuntime, type Runtime } from '../../shared/runtime.ts';
import { configFromCommand } from '../context.ts';

/** What the start command hands every role besides the runtime. */
export interface RoleOptions {
  /** `docs`: the API serves its reference without market data. */
  profile: 'default' | 'docs';
  /** The data token for the API: DATA_TOKEN, or one made here when the data role runs too. */
  dataToken?: string;
  /** Where the data role of this process listens, once it does (the API's default DATA_URL). */
  dataUrl?: string;
}

type RoleStarter = (runtime: Runtime, options: RoleOptions) => Promise<RoleHandle>;

// Each process role the platform can run; `all` runs every one of them in this process, in
// this order (the API after the data module it calls).
export const ROLES: Record<string, RoleStarter> = {
  data: startDataRole,
  api: startApiRole,
  worker: startWorkerRole,
};

const LOCAL_TOKEN_NAME = 'local-start';

export function registerStartCommand(program: Command) {
  program
    .command('start')
    .description('Provision (if needed), migrate and run the platform')
    .addOption(
      new Option('--role <role>', 'which part to run')
        .choices(['all', ...Object.keys(ROLES)])
        .default('all'),
    )
    .addOption(
      new Option('--profile <profile>', 'docs: the API serves its reference without market data')
        .choices(['default', 'docs'])
        .default('default'),
    )
    .action(
      async (options: { role: string; profile: RoleOptions['profile'] }, command: Command) => {
        const config = configFromCommand(command);
        const logger = createLogger(config.LOG_LEVEL);
        await startPlatform(
          config,
          logger,
          options.role === 'all' ? Object.keys(ROLES) : [options.role],
          options.profile,
        );
      },
    );
}

export async function ensureTimescale(config: Config, logger: Logger) {
  const state = await serverExtensionState(config.DATABASE_URL);
  if (state.available && state.preloaded) return;
  logger.warn('TimescaleDB is not installed or not preloaded; running the provisioning script');
  const code = await runProvisioning();
  if (code !== 0) {
    throw new Error(
      'TimescaleDB is missing and could not be provisioned here (see the message above). ' +
        'Run `npm run db:provision` as root on Debian, or use `docker compose up`.',
    );
  }
}

export async function startPlatform(
  config: Config,
  logger: Logger,
  roles: string[],
  profile: RoleOptions['profile'] = 'default',
) {
  await ensureTimescale(config, logger);
  await ensureDatabase(config.DATABASE_URL);
  const { applied } = await migrate(config.DATABASE_URL, logger);
  if (applied.length) logger.info({ applied }, 'migrations applied');

  const runtime = await createRuntime(config, logger);
  const handles: RoleHandle[] = [];
  installShutdown(handles, runtime, logger);
  // Without DATA_TOKEN, a data role in this process gets a fresh local token, which the API
  // role uses to call it and the person at the terminal gets to try it.
  const localToken =
    roles.includes('data') && !config.DATA_TOKEN ? await createLocalToken(runtime) : undefined;
  const options: RoleOptions = { profile, dataToken: config.DATA_TOKEN ?? localToken };
  for (const role of roles) {
    const starter = ROLES[role];
    if (!starter) throw new Error(`unknown role '${role}'`);
    const handle = await starter(runtime, options);
    if (handle.name === 'data' && !config.DATA_URL) options.dataUrl = handle.url;
    handles.push(handle);
  }
  await announce(runtime, handles, localToken);
}

async function createLocalToken(runtime: Runtime): Promise<string> {
  await revokeToken(runtime.pool, LOCAL_TOKEN_NAME).catch(() => {});
  const { token } = await createToken(runtime.pool, LOCAL_TOKEN_NAME, ['read', 'write']);
  return token;
}

/** Tells the person at the terminal where things listen and hands them a working token. */
async function announce(runtime: Runtime, handles: RoleHandle[], token: string | undefined) {
  const lines = handles.filter((h) => h.url).map((h) => `  ${h.name.padEnd(6)} ${h.url}`);
  if (token) {
    const dataUrl = handles.find((h) => h.name === 'data')?.url;
    lines.push(
      '',
      `  data token (read, write; replaced at every start): ${token}`,
      `  try: curl -H "Authorization: Bearer ${token}" ${dataUrl}/data/currency/all`,
    );
  }
  const currencies = await runtime.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM currencies`);
  process.stdout.write(
    `\nplatform is running (${String(currencies)} currencies)\n${lines.join('\n')}\n\n`,
  );
}

function installShutdown(handles: RoleHandle[], runtime: Runtime, logger: Logger) {
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    for (const handle of handles) handle.beginDrain();
    await Promise.allSettled(handles.map((h) => h.stop()));
    await runtime.close();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', (s) => void shutdown(s));
  process.on('SIGINT', (s) => void shutdown(s));
}
