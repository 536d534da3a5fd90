// Writes docs/configuration.md from the configuration schema (src/shared/config.ts): every
// variable with its type, default and description. `npm run docs:config` after changing the
// schema; test/ops/configDocs.test.ts fails while the committed file is stale.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { configSchema } from '../src/shared/config.ts';

export const CONFIG_DOC_PATH = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));

interface JsonSchemaField {
  type?: string;
  enum?: unknown[];
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  default?: unknown;
}

function describeType(field: JsonSchemaField): string {
  if (field.enum) return `one of ${field.enum.map((v) => `\`${String(v)}\``).join(', ')}`;
  const parts: string[] = [field.format === 'uri' ? 'URL' : (field.type ?? 'string')];
  if (field.minimum !== undefined && field.maximum !== undefined && field.maximum < 2 ** 53 - 1) {
    parts.push(`${field.minimum}–${field.maximum}`);
  } else if (field.minimum !== undefined) {
    parts.push(`≥ ${field.minimum}`);
  }
  if (field.pattern) parts.push(`matching \`${field.pattern}\``);
  return parts.join(' ');
}

function defaultOf(field: JsonSchemaField, schema: z.ZodType): string {
  if (field.default !== undefined)
    return `\`${JSON.stringify(field.default).replace(/^"|"$/g, '')}\``;
  // Defaults given after a transform only show in the parsed value.
  const parsed = schema.safeParse(undefined);
  if (!parsed.success || parsed.data === undefined) return '(unset)';
  const value = parsed.data as string | number | boolean | string[];
  if (Array.isArray(value)) return value.length ? `\`${value.join(',')}\`` : '(empty)';
  return `\`${String(value)}\``;
}

function escapeCell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

export function renderConfigurationDoc(): string {
  const rows = Object.entries(configSchema.shape).map(([name, schema]) => {
    const zodField = schema as z.ZodType;
    const field = z.toJSONSchema(zodField, {
      io: 'input',
      unrepresentable: 'any',
    }) as JsonSchemaField;
    const description = zodField.description ?? '';
    return `| \`${name}\` | ${escapeCell(describeType(field))} | ${escapeCell(defaultOf(field, zodField))} | ${escapeCell(description)} |`;
  });
  return [
    '# Configuration',
    '',
    '<!-- Generated from src/shared/config.ts by `npm run docs:config`; do not edit by hand. -->',
    '',
    'Every setting is an environment variable, and every one is optional. The configuration is',
    'parsed once at start-up; a bad value stops the command with exit code 2 and one message',
    'listing every problem. An empty value (`FOO=`) counts as unset. Booleans accept',
    '`true`/`false`, `1`/`0`, `yes`/`no`.',
    '',
    '| Variable | Type | Default | Meaning |',
    '|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(CONFIG_DOC_PATH, renderConfigurationDoc());
  process.stdout.write(`wrote ${CONFIG_DOC_PATH}\n`);
}
