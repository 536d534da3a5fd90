import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

// TimescaleDB in the PostgreSQL server is the one thing the platform needs that npm cannot
// install. `npm start` and `npm test` both call ensureTimescale(): it does nothing on a
// provisioned server, runs scripts/provision-timescaledb.sh where that script can do the job (as
// root on Debian), and otherwise stops with the one command that would.

export const PROVISION_SCRIPT = fileURLToPath(
  new URL('../../scripts/provision-timescaledb.sh', import.meta.url),
);

export interface ServerExtensionState {
  available: boolean;
  preloaded: boolean;
}

/** Whether the server behind `url` can load TimescaleDB (checked in its `postgres` database). */
export async function serverExtensionState(url: string): Promise<ServerExtensionState> {
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({
    connectionString: admin.toString(),
    connectionTimeoutMillis: 5000,
  });
  await client.connect();
  try {
    const { rows } = await client.query<{ available: boolean; preloaded: boolean }>(`
      SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'timescaledb') AS available,
             coalesce(current_setting('shared_preload_libraries', true), '') LIKE '%timescaledb%' AS preloaded
    `);
    return rows[0] ?? { available: false, preloaded: false };
  } finally {
    await client.end();
  }
}

export interface ServerState extends ServerExtensionState {
  /** False when no connection could be made (stopped server, wrong address). */
  reachable: boolean;
}

async function serverState(url: string): Promise<ServerState> {
  try {
    return { reachable: true, ...(await serverExtensionState(url)) };
  } catch {
    return { reachable: false, available: false, preloaded: false };
  }
}

/** What this machine lets the provisioning script do. */
export interface HostFacts {
  root: boolean;
  /** Debian or a derivative, with apt-get: the script builds Debian's source package. */
  debian: boolean;
}

export function hostFacts(): HostFacts {
  return {
    root: process.getuid?.() === 0,
    debian: existsSync('/etc/debian_version') && onPath('apt-get'),
  };
}

function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

export type ProvisionStep =
  | { action: 'none' }
  | { action: 'run-script'; reason: string }
  | { action: 'tell-operator'; message: string };

/** The command that provisions this server, as the person running us would type it. */
export const PROVISION_COMMAND = 'npm run db:provision';

/**
 * What to do about the server's state on this host. A provisioned server is left alone: the
 * script would only restart PostgreSQL to change shared_preload_libraries, which it never needs
 * to when timescaledb is already preloaded, and it is not even started then.
 */
export function provisionStep(state: ServerState, host: HostFacts, where: string): ProvisionStep {
  if (state.reachable && state.available && state.preloaded) return { action: 'none' };
  const missing = !state.reachable
    ? `PostgreSQL is not reachable at ${where}`
    : !state.available
      ? `TimescaleDB is not installed in the PostgreSQL server at ${where}`
      : `TimescaleDB is installed in the PostgreSQL server at ${where} but not in shared_preload_libraries`;
  // As root on Debian the script installs, preloads (restarting PostgreSQL once) or starts a
  // stopped local cluster, whichever is missing.
  if (host.root && host.debian) return { action: 'run-script', reason: missing };
  if (host.debian) {
    return {
      action: 'tell-operator',
      message: `${missing}. Run \`sudo ${PROVISION_COMMAND}\` once (it needs root), then run this again.`,
    };
  }
  return {
    action: 'tell-operator',
    message:
      `${missing}, and this machine is not Debian, where \`${PROVISION_COMMAND}\` could install ` +
      'it. Run the database in a container: `docker compose up -d timescaledb` (after ' +
      '`cp .env.example .env`), with DATABASE_URL (TEST_DATABASE_URL for the tests) pointing at ' +
      'postgres://platform:platform@127.0.0.1:5432/platform.',
  };
}

/** Runs scripts/provision-timescaledb.sh with the caller's terminal; resolves with its exit code. */
export function runProvisioning(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [PROVISION_SCRIPT], { stdio: 'inherit', env });
    child.once('error', reject);
    child.once('exit', (code) => resolve(code ?? 1));
  });
}

export interface EnsureTimescaleOptions {
  /** Progress for the person waiting (the script itself writes to the inherited terminal). */
  log?: (message: string) => void;
  host?: HostFacts;
  run?: (env: NodeJS.ProcessEnv) => Promise<number>;
}

/**
 * Makes sure the server behind `url` has TimescaleDB installed and preloaded, provisioning it
 * where this machine can; throws with the command to run where it cannot.
 */
export async function ensureTimescale(
  url: string,
  { log = () => {}, host = hostFacts(), run = runProvisioning }: EnsureTimescaleOptions = {},
): Promise<void> {
  const parsed = new URL(url);
  const where = `${parsed.hostname}:${parsed.port || '5432'}`;
  const step = provisionStep(await serverState(url), host, where);
  if (step.action === 'none') return;
  if (step.action === 'tell-operator') throw new Error(step.message);
  log(`${step.reason}; running ${PROVISION_COMMAND} (scripts/provision-timescaledb.sh)`);
  // The script reads the server's address from DATABASE_URL unless PGHOST/PGPORT/PGUSER say else.
  const code = await run({ ...process.env, DATABASE_URL: url });
  const after = await serverState(url);
  if (code !== 0 || provisionStep(after, host, where).action !== 'none') {
    throw new Error(
      `TimescaleDB could not be provisioned at ${where} (the provisioning script exited with ` +
        `${code}; its message is above). Fix what it names and run \`${PROVISION_COMMAND}\` again.`,
    );
  }
}
