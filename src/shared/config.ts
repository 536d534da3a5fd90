import { z } from 'zod';
import { ConfigError } from './configError.ts';
import { apiSection, DEV_WEB_ORIGIN } from './config/api.ts';
import { databaseSection } from './config/database.ts';
import { dataSection } from './config/data.ts';
import { marketSection } from './config/market.ts';
import { observabilitySection } from './config/observability.ts';
import { parseEnvironment } from './config/parse.ts';
import { serversSection } from './config/servers.ts';

// Kept here for their callers; ConfigError lives apart so that the CLI can tell it without
// loading the schema.
export { ConfigError };
export { withDefaultUser } from './config/database.ts';
export type { MarketSourceName } from './config/market.ts';

// The whole platform's configuration, parsed once at start-up from the environment (and a few CLI
// flags). Every variable is optional; bad values stop start-up with one message listing them all.
// Each section is a module of its own (src/shared/config/), so that a short command can parse
// only the sections it reads with the same rules (`platform backfill <files>`: database and
// observability) without building the whole schema first.

/** The sections in the order docs/configuration.md lists them. */
export const configSections = [
  { title: 'Database', schema: databaseSection },
  { title: 'HTTP servers and shutdown', schema: serversSection },
  { title: 'Data module', schema: dataSection },
  { title: 'Market sources, backfill and healing', schema: marketSection },
  { title: 'Application API', schema: apiSection },
  { title: 'Logs and traces', schema: observabilitySection },
] as const;

export const configSchema = z.object({
  ...databaseSection.shape,
  ...serversSection.shape,
  ...dataSection.shape,
  ...marketSection.shape,
  ...apiSection.shape,
  ...observabilitySection.shape,
});

export type Config = z.infer<typeof configSchema>;

/** Parses the environment; empty strings count as unset so `FOO=` falls back to the default. */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  overrides: Partial<Record<keyof Config, string>> = {},
): Config {
  return parseEnvironment(configSchema, env, overrides);
}

/** Web origins allowed to call the API with credentials (API_ALLOWED_ORIGINS or its default). */
export function allowedOrigins(config: Config): string[] {
  return config.API_ALLOWED_ORIGINS ?? (config.NODE_ENV === 'production' ? [] : [DEV_WEB_ORIGIN]);
}

export function dataModuleUrl(config: Config): string {
  return config.DATA_URL ?? `http://127.0.0.1:${config.DATA_PORT}`;
}
