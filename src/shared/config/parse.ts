import type { z } from 'zod';
import { ConfigError } from '../configError.ts';

/**
 * Parses the variables of `schema` (the whole configuration, or the sections one command reads)
 * from the environment; `overrides` (CLI flags) win over it. Empty strings count as unset, so
 * `FOO=` falls back to the default. Bad values stop start-up with one message listing them all.
 */
export function parseEnvironment<S extends z.ZodObject>(
  schema: S,
  env: Record<string, string | undefined>,
  overrides: Record<string, string | undefined> = {},
): z.infer<S> {
  const input: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = overrides[key] ?? env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`),
    );
  }
  return parsed.data;
}
