import type { Command } from 'commander';
import { createDatabasePool } from '../../shared/db/pool.ts';
import { createToken, listTokens, revokeToken } from '../../data/tokens/tokenStore.ts';
import type { Scope } from '../../data/tokens/tokenRules.ts';
import { printable } from '../../shared/printable.ts';
import { configSchema } from '../../shared/config.ts';
import { configFromCommand, printJson } from '../context.ts';

// `platform token …`, loaded only when a token command runs (keeps the CLI's start-up light).

async function withPool<T>(
  command: Command,
  work: (pool: Awaited<ReturnType<typeof createDatabasePool>>) => Promise<T>,
) {
  const config = configFromCommand(command, configSchema);
  const pool = await createDatabasePool(config.DATABASE_URL, { maxPoolSize: 1 });
  try {
    return await work(pool);
  } finally {
    await pool.end();
  }
}

export interface CreateTokenOptions {
  name: string;
  scope: Scope[];
  json?: boolean;
}

export async function runCreateToken(options: CreateTokenOptions, command: Command) {
  const created = await withPool(command, (pool) => createToken(pool, options.name, options.scope));
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
}

export async function runListTokens(options: { json?: boolean }, command: Command) {
  const tokens = await withPool(command, (pool) => listTokens(pool));
  if (options.json) return printJson(tokens);
  if (tokens.length === 0) return void process.stdout.write('no active tokens\n');
  for (const t of tokens) {
    process.stdout.write(
      `${printable(t.name).padEnd(24)} ${t.scopes.join(',').padEnd(12)} created ${t.createdAt.toISOString()}` +
        `  last used ${t.lastUsedAt?.toISOString() ?? 'never'}\n`,
    );
  }
}

export async function runRevokeToken(name: string, options: { json?: boolean }, command: Command) {
  await withPool(command, (pool) => revokeToken(pool, name));
  if (options.json) return printJson({ revoked: name });
  process.stdout.write(`revoked token '${printable(name)}'\n`);
}
