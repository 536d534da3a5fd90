import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { sql } from 'slonik';
import { startDataRole } from '../../data/start.ts';
import { startWorkerRole } from '../../worker/start.ts';
import { withWorkerOperations } from '../../worker/operations.ts';
import { createToken, revokeToken } from '../../data/tokens/tokenStore.ts';
import { configSchema, type Config } from '../../shared/config.ts';
import { NotFoundError } from '../../shared/errors.ts';
import { ensureDatabase } from '../../shared/db/ensureDatabase.ts';
import { migrate } from '../../shared/db/migrate.ts';
import { startOpsListener } from '../../shared/http/opsServer.ts';
import { createLogger, type Logger } from '../../shared/logger.ts';
import { ensureTimescale } from '../../shared/provision.ts';
import { PROCESS_ROLES, type ProcessRole, type RoleHandle } from '../../shared/roles.ts';
import { createRuntime, type Runtime } from '../../shared/runtime.ts';
import { shutdownTelemetry } from '../../shared/telemetry.ts';
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

// How each process role starts; `all` runs every one of them in this process, in the order of
// PROCESS_ROLES (the API after the data module it calls).
const ROLES: Record<ProcessRole, RoleStarter> = {
  data: startDataRole,
  // Loaded on demand: its image and password libraries would slow every other command's start.
  api: async (runtime, options) =>
    (await import('../../api/start.ts')).startApiRole(runtime, options),
  worker: withWorkerOperations(startWorkerRole),
};

const LOCAL_TOKEN_PREFIX = 'local-start-';

export interface StartOptions {
  role: 'all' | ProcessRole;
  profile: RoleOptions['profile'];
}

/** `platform start`, loaded only when the command runs (keeps the other commands' start-up light). */
export async function runStart(options: StartOptions, command: Command) {
  const config = configFromCommand(command, configSchema);
  const logger = createLogger(config.LOG_LEVEL);
  await startPlatform(
    config,
    logger,
    options.role === 'all' ? [...PROCESS_ROLES] : [options.role],
    options.profile,
  );
}

export async function startPlatform(
  config: Config,
  logger: Logger,
  roles: ProcessRole[],
  profile: RoleOptions['profile'] = 'default',
) {
  await ensureTimescale(config.DATABASE_URL, { log: (message) => logger.warn(message) });
  await ensureDatabase(config.DATABASE_URL);
  const { applied } = await migrate(config.DATABASE_URL, logger);
  if (applied.length) logger.info({ applied }, 'migrations applied');

  const runtime = await createRuntime(config, logger);
  const handles: RoleHandle[] = [];
  installShutdown(handles, runtime, logger);
  const options: RoleOptions = { profile, dataToken: config.DATA_TOKEN };
  let localToken: string | undefined;
  for (const role of roles) {
    const handle = await ROLES[role](runtime, options);
    if (handle.name === 'data' && !config.DATA_URL) options.dataUrl = handle.url;
    handles.push(handle);
    // Without DATA_TOKEN, a data role in this process gets a fresh local token, which the API
    // role (started after it) uses to call it and the person at the terminal gets to try it.
    if (handle.name === 'data' && !config.DATA_TOKEN && handle.url) {
      localToken = await createLocalToken(runtime, handle.url);
      options.dataToken = localToken;
    }
  }
  // Prometheus needs /metrics where no role's port serves it (a lone worker, an API: its port is
  // public), and probes need a port where no role serves HTTP at all.
  if (!handles.some((h) => h.servesMetrics)) {
    handles.push(await startOpsListener(runtime, [...handles]));
  }
  await announce(runtime, handles, localToken);
}

/**
 * The local token belongs to this instance: named after the host and the port its data role
 * holds. Only that same name is replaced, so a start replaces the token of an earlier start of
 * the same instance (which cannot still run: this one holds its port now) and never the token
 * of another running instance, which an API elsewhere may be using.
 */
async function createLocalToken(runtime: Runtime, dataUrl: string): Promise<string> {
  const name = localTokenName(hostname(), new URL(dataUrl).port);
  await revokeToken(runtime.pool, name).catch((error: unknown) => {
    if (!(error instanceof NotFoundError)) throw error;
  });
  const { token } = await createToken(runtime.pool, name, ['read', 'write']);
  return token;
}

/** `local-start-<host>-<port>` within the 64 characters and the alphabet token names allow. */
function localTokenName(host: string, port: string): string {
  const safeHost = host.replace(/[^A-Za-z0-9.-]/g, '-').slice(0, 40) || 'host';
  return `${LOCAL_TOKEN_PREFIX}${safeHost}-${port}`;
}

/**
 * Tells the person at the terminal where things listen and hands them a working token. The token
 * grants read and write, so it is only shown on a terminal: off one (a container, a service
 * manager, a pipe) stdout is a log stream that others keep and read, and the banner says how to
 * get a token instead.
 */
async function announce(runtime: Runtime, handles: RoleHandle[], token: string | undefined) {
  const lines = handles.filter((h) => h.url).map((h) => `  ${h.name.padEnd(6)} ${h.url}`);
  if (token && process.stdout.isTTY) {
    const dataUrl = handles.find((h) => h.name === 'data')?.url;
    lines.push(
      '',
      `  data token (read, write; replaced at every start of this host and port): ${token}`,
      `  try: curl -H "Authorization: Bearer ${token}" ${dataUrl}/data/currency/all`,
    );
  } else if (token) {
    lines.push(
      '',
      '  data token: not shown, as this output is not a terminal (it would end up in logs);',
      `  make one: ${TOKEN_HINT}`,
    );
  }
  const currencies = await runtime.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM currencies`);
  process.stdout.write(
    `\nplatform is running (${String(currencies)} currencies)\n${lines.join('\n')}\n\n`,
  );
}

const TOKEN_HINT = 'platform token create --name <you> --scope read --scope write';

/**
 * SIGTERM/SIGINT: readiness turns 503 at once; during SHUTDOWN_DRAIN_SECONDS the process still
 * serves (load balancers notice and stop routing to it); then every role stops taking work and
 * finishes what is in flight within SHUTDOWN_GRACE_SECONDS; then the pools close and the process
 * exits 0 (1 if the grace ran out). A second signal exits at once; a hard deadline backs it all.
 */
function installShutdown(handles: RoleHandle[], runtime: Runtime, logger: Logger) {
  const drainMs = runtime.config.SHUTDOWN_DRAIN_SECONDS * 1000;
  const graceMs = runtime.config.SHUTDOWN_GRACE_SECONDS * 1000;
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    armHardDeadline(drainMs + graceMs + HARD_DEADLINE_MARGIN_MS, logger);
    logger.info({ signal, drainMs, graceMs }, 'shutting down: readiness is now 503');
    for (const handle of handles) handle.beginDrain();
    if (drainMs > 0) await sleep(drainMs);
    logger.info('draining done; finishing in-flight work');
    const finished = await Promise.race([
      Promise.allSettled(handles.map((h) => h.stop(graceMs))).then(() => true),
      // Roles bound their own stop by the grace; this margin only covers a role that does not.
      sleep(graceMs + STOP_MARGIN_MS, false, { ref: false }),
    ]);
    if (!finished) logger.warn('in-flight work outlived the grace period; closing anyway');
    await runtime.close();
    await shutdownTelemetry();
    logger.info('stopped');
    process.exit(finished ? 0 : 1);
  };
  process.on('SIGTERM', (s) => void shutdown(s));
  process.on('SIGINT', (s) => void shutdown(s));
}

const STOP_MARGIN_MS = 2_000;
const HARD_DEADLINE_MARGIN_MS = 5_000;

function armHardDeadline(ms: number, logger: Logger) {
  setTimeout(() => {
    logger.error({ ms }, 'shutdown did not complete in time: exiting');
    process.exit(1);
  }, ms).unref();
}
