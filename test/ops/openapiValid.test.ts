import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startApiHarness, type ApiHarness } from '../support/api.ts';

// Both services' /openapi.json, as served, through a real validator (swagger-parser), and the
// parts a generator gets wrong checked against what the routes really do.

interface Operation {
  security?: unknown[];
  requestBody?: { content: Record<string, { schema: { items?: { anyOf?: unknown[] } } }> };
  responses: Record<
    string,
    { headers?: Record<string, { required?: boolean }>; content?: Record<string, unknown> }
  >;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
}

let harness: ApiHarness;
const documents: Record<'data' | 'api', Document> = {} as never;

beforeAll(async () => {
  harness = await startApiHarness();
  documents.data = (await (await fetch(`${harness.dataUrl}/openapi.json`)).json()) as Document;
  documents.api = (await (await fetch(`${harness.url}/openapi.json`)).json()) as Document;
});

afterAll(async () => {
  await harness.close();
});

function operations(document: Document): Array<[string, Operation]> {
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]): [string, Operation] => [`${method} ${path}`, op]),
  );
}

describe.each(['data', 'api'] as const)('the %s document', (name) => {
  test('passes swagger-parser validation, every $ref resolving', async () => {
    await expect(
      SwaggerParser.validate(structuredClone(documents[name]) as never),
    ).resolves.toBeDefined();
  });

  test('every operation says which credentials it needs, public ones with security: []', () => {
    for (const [, op] of operations(documents[name])) expect(Array.isArray(op.security)).toBe(true);
  });

  test('429 and 503 answers declare Retry-After', () => {
    for (const [, op] of operations(documents[name])) {
      if (op.responses['429']) {
        expect(op.responses['429'].headers?.['Retry-After']).toMatchObject({ required: true });
      }
      if (op.responses['503']) expect(op.responses['503'].headers?.['Retry-After']).toBeDefined();
    }
  });
});

test('public API routes declare an empty security list; session routes the cookie', () => {
  expect(documents.api.paths['/api/authorize/login']!.post!.security).toEqual([]);
  expect(documents.api.paths['/api/currency/all']!.get!.security).toEqual([]);
  expect(documents.api.paths['/api/portfolio/get']!.get!.security).toEqual([{ sessionCookie: [] }]);
  expect(documents.api.paths['/api/authorize/login']!.post!.responses['429']).toBeDefined();
});

test("the data module's 401 declares the WWW-Authenticate challenge it really sends", async () => {
  for (const [, op] of operations(documents.data)) {
    if (op.responses['401']) {
      expect(op.responses['401'].headers?.['WWW-Authenticate']).toMatchObject({ required: true });
    }
  }
  const refused = await fetch(`${harness.dataUrl}/data/currency/all`);
  expect(refused.status).toBe(401);
  expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer realm="data"/);
});

test('the bulk body lists candle and tick items; the export both of its media types', () => {
  const bulk = documents.data.paths['/data/prices/bulk']!.post!.requestBody!.content;
  for (const type of ['application/json', 'application/x-ndjson']) {
    expect(bulk[type]!.schema.items!.anyOf).toEqual([
      { $ref: '#/components/schemas/BulkCandle' },
      { $ref: '#/components/schemas/BulkTick' },
    ]);
  }
  expect(documents.data.components.schemas).toHaveProperty('BulkCandle');
  expect(documents.data.components.schemas).toHaveProperty('BulkTick');
  const exported = documents.data.paths['/data/candles/{code}/export']!.get!.responses['200']!;
  expect(Object.keys(exported.content ?? {}).sort()).toEqual(['application/x-ndjson', 'text/csv']);
});
