import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
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

describe('real answers match the schema their document gives for that status', () => {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const validators = new Map<string, ValidateFunction>();

  /** The documented schema of `status` for the operation, with its $refs into the document. */
  function validatorFor(name: 'data' | 'api', method: string, path: string, status: number) {
    const key = `${name} ${method} ${path} ${status}`;
    let validate = validators.get(key);
    if (!validate) {
      const response = documents[name].paths[path]?.[method]?.responses[String(status)];
      if (!response) throw new Error(`${key}: status not documented`);
      const media = response.content?.['application/json'] as { schema: object } | undefined;
      if (!media) throw new Error(`${key}: no JSON body documented`);
      const schema = JSON.parse(
        JSON.stringify(media.schema).replaceAll('"#/components/', `"${name}#/components/`),
      );
      if (!ajv.getSchema(name)) ajv.addSchema({ components: documents[name].components }, name);
      validate = ajv.compile(schema);
      validators.set(key, validate);
    }
    return validate;
  }

  const expectDocumented = (
    name: 'data' | 'api',
    method: string,
    path: string,
    answer: { status: number; body: unknown },
  ) => {
    const validate = validatorFor(name, method, path, answer.status);
    expect({
      path,
      status: answer.status,
      body: answer.body,
      errors: validate(answer.body) ? null : validate.errors,
    }).toMatchObject({ errors: null });
  };

  test('the identity routes, errors (which carry authorized) included', async () => {
    const { client, account } = await harness.signedInClient();
    const anonymous = harness.client();
    const cases: Array<[string, string, Promise<{ status: number; body: unknown }>, number]> = [
      ['post', '/api/authorize/signup', client.post('/api/authorize/signup', account), 400],
      ['post', '/api/authorize/signup', anonymous.post('/api/authorize/signup', account), 409],
      ['post', '/api/authorize/signup', anonymous.post('/api/authorize/signup', {}), 400],
      ['post', '/api/authorize/login', client.post('/api/authorize/login', account), 400],
      [
        'post',
        '/api/authorize/login',
        anonymous.post('/api/authorize/login', { ...account, password: 'wrong-password' }),
        401,
      ],
      ['get', '/api/authorize/isloggedin', anonymous.get('/api/authorize/isloggedin'), 401],
      ['get', '/api/authorize/isloggedin', client.get('/api/authorize/isloggedin'), 200],
      ['get', '/api/authorize/logout', anonymous.get('/api/authorize/logout'), 400],
      ['post', '/api/authorize/logout', anonymous.post('/api/authorize/logout'), 400],
    ];
    for (const [method, path, pending, status] of cases) {
      const answer = await pending;
      expect({ path, status: answer.status }).toEqual({ path, status });
      expectDocumented('api', method, path, answer);
    }
  });

  test('every JSON body route documents the 413 and 415 its body parser answers', async () => {
    const { client } = await harness.signedInClient();
    const tooLarge = JSON.stringify({ currencyCode: 'BTC', shares: 1, pad: 'x'.repeat(2 << 20) });
    for (const path of ['/api/portfolio/add', '/api/authorize/login']) {
      const large = await client.request('POST', path, {
        body: tooLarge,
        headers: { 'content-type': 'application/json' },
      });
      expect({ path, status: large.status }).toEqual({ path, status: 413 });
      expectDocumented('api', 'post', path, large);
      const text = await client.request('POST', path, {
        body: '{}',
        headers: { 'content-type': 'text/plain' },
      });
      expect({ path, status: text.status }).toEqual({ path, status: 415 });
      expectDocumented('api', 'post', path, text);
    }
    for (const name of ['data', 'api'] as const) {
      for (const [operation, op] of operations(documents[name])) {
        if (!op.requestBody) continue;
        expect({ operation, documented: Object.keys(op.responses) }).toEqual({
          operation,
          documented: expect.arrayContaining(['413', '415']),
        });
      }
    }
  });
});
