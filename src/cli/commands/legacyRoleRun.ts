import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { createLegacyRole, dropLegacyRole } from '../../data/legacy/role.ts';
import { createDatabasePool } from '../../shared/db/pool.ts';
import { configSchema } from '../../shared/config.ts';
import { configFromCommand, printJson } from '../context.ts';

// `platform legacy-role …`, loaded only when one of them runs (keeps the CLI's start-up light).

async function withPool(
  command: Command,
  work: (pool: Awaited<ReturnType<typeof createDatabasePool>>) => Promise<void>,
) {
  const config = configFromCommand(command, configSchema);
  const pool = await createDatabasePool(config.DATABASE_URL, { maxPoolSize: 1 });
  try {
    await work(pool);
  } finally {
    await pool.end();
  }
}

export interface CreateRoleOptions {
  password?: string;
  json?: boolean;
}

export async function runCreateLegacyRole(
  name: string,
  options: CreateRoleOptions,
  command: Command,
) {
  const password = options.password ?? randomBytes(18).toString('base64url');
  await withPool(command, (pool) => createLegacyRole(pool, name, password));
  if (options.json) return printJson({ name, password });
  process.stdout.write(
    options.password
      ? `created role ${name} (search_path=legacy, read-only)\n`
      : `${password}\n(password of role ${name}; it will not be shown again)\n`,
  );
}

export async function runDropLegacyRole(
  name: string,
  options: { json?: boolean },
  command: Command,
) {
  await withPool(command, (pool) => dropLegacyRole(pool, name));
  if (options.json) return printJson({ dropped: name });
  process.stdout.write(`dropped role ${name}\n`);
}
