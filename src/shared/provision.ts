import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

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

/** Runs scripts/provision-timescaledb.sh with the caller's terminal; resolves with its exit code. */
export function runProvisioning(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [PROVISION_SCRIPT], { stdio: 'inherit', env });
    child.once('error', reject);
    child.once('exit', (code) => resolve(code ?? 1));
  });
}
