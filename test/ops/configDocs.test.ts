import { readFileSync } from 'node:fs';
import { expect, test } from '@jest/globals';
import { CONFIG_DOC_PATH, renderConfigurationDoc } from '../../scripts/generate-config-docs.ts';
import { configSchema } from '../../src/shared/config.ts';

test('docs/configuration.md is generated from the current schema (run `npm run docs:config`)', () => {
  const committed = readFileSync(CONFIG_DOC_PATH, 'utf8');
  const fresh = renderConfigurationDoc();
  // On failure the diff shows what changed in the schema since the file was generated.
  expect(committed).toBe(fresh);
});

test('every variable appears with its description and default', () => {
  const doc = renderConfigurationDoc();
  for (const [name, schema] of Object.entries(configSchema.shape)) {
    const row = doc.split('\n').find((line) => line.startsWith(`| \`${name}\` |`));
    expect({ name, row: row !== undefined }).toEqual({ name, row: true });
    expect(schema.description).toBeTruthy();
    expect(row).toContain(schema.description!.slice(0, 20));
  }
  expect(doc).toMatch(/\| `DATA_PORT` \| integer 0–65535 \| `8085` \|/);
  expect(doc).toMatch(/\| `PLATFORM_LOAD_CURRENCIES` \| one of .* \| `true` \|/);
  expect(doc).toMatch(/\| `DATA_TRUSTED_NETWORKS` \| string \| \(empty\) \|/);
});
