// Writes docs/configuration.md from the configuration schema (src/shared/config.ts, its sections
// in src/shared/config/): every variable with its type, default and description, section by section. `npm run docs:config` after changing the
// schema; test/ops/configDocs.test.ts fails while the committed file is stale.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { configSections } from '../src/shared/config.ts';

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

function renderRow(name: string, schema: z.ZodType): string {
  const field = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchemaField;
  const description = schema.description ?? '';
  return `| \`${name}\` | ${escapeCell(describeType(field))} | ${escapeCell(defaultOf(field, schema))} | ${escapeCell(description)} |`;
}

export function renderConfigurationDoc(): string {
  const sections = configSections.flatMap(({ title, schema }) => [
    `## ${title}`,
    '',
    '| Variable | Type | Default | Meaning |',
    '|---|---|---|---|',
    ...Object.entries(schema.shape).map(([name, field]) => renderRow(name, field as z.ZodType)),
    '',
  ]);
  return [
    '# Configuration',
    '',
    '<!-- Generated from src/shared/config.ts by `npm run docs:config`; do not edit by hand. -->',
    '',
    'Every setting is an environment variable, and every one is optional. A command parses the',
    'configuration once at start-up; a bad value stops it with exit code 2 and one message listing',
    'every problem. `platform backfill <files>` reads only its two sections (Database; Logs and',
    'traces), so it starts sooner without building the rest; every other command reads them all. An',
    'empty value (`FOO=`) counts as unset. Booleans accept `true`/`false`, `1`/`0`, `yes`/`no`.',
    '',
    ...sections,
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(CONFIG_DOC_PATH, renderConfigurationDoc());
  process.stdout.write(`wrote ${CONFIG_DOC_PATH}\n`);
}
