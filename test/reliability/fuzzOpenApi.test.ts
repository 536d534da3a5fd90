import { afterAll, expect, test } from '@jest/globals';
import fc from 'fast-check';
import { sql } from 'slonik';
import { z } from 'zod';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { startApiHarness } from '../support/api.ts';
import { setSnapshot } from '../support/prices.ts';
import {
  hostileString,
  mutated,
  resolve,
  valid,
  type OpenApiDocument,
} from './openapiArbitraries.ts';

// Property-based fuzzing of every route of both services, derived from their own /openapi.json:
// valid requests and hostile ones (wrong types, missing and extra fields, huge and special
// values, unicode, malformed JSON, wrong media types, oversized bodies, traversal in path
// parameters). Whatever is sent: no 5xx, every error in the contract's shape, and a rejected
// write changes no stored row. Each route gets a time budget (FUZZ_ROUTE_MS, default 2.5 s) and
// at most FUZZ_RUNS requests (default 1000); the count each route reached is printed.

const ROUTE_MS = Number(process.env.FUZZ_ROUTE_MS ?? 2500);
const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);

const harness = await startApiHarness();
afterAll(async () => {
  await harness.close();
  console.log(`fuzz: requests per route\n${[...sent].map(([r, n]) => `  ${n}\t${r}`).join('\n')}`);
});
const pool = harness.runtime.pool;
await setSnapshot(pool, 'BTC', 100, new Date());
const { token } = await createToken(pool, 'fuzz', ['read', 'write']);
const { client: user, userId } = await harness.signedInClient();
await user.post('/api/portfolio/add', { currencyCode: 'BTC', shares: 1, walletDollars: 5 });
const documents = {
  data: (await (await fetch(`${harness.dataUrl}/openapi.json`)).json()) as OpenApiDocument,
  api: (await (await fetch(`${harness.url}/openapi.json`)).json()) as OpenApiDocument,
};
const sent = new Map<string, number>();

interface Operation {
  service: 'data' | 'api';
  method: string;
  path: string;
  op: any;
}
const operations: Operation[] = [];
for (const service of ['data', 'api'] as const) {
  for (const [path, methods] of Object.entries(documents[service].paths)) {
    for (const [method, op] of Object.entries(methods)) {
      operations.push({ service, method: method.toUpperCase(), path, op });
    }
  }
}

// Every table a request could write to (the login throttle's own table is left out: counting
// failed logins is its job).
const STORED_ROWS = sql.type(z.object({ n: z.number() }))`
  SELECT (SELECT count(*) FROM price_observations) + (SELECT count(*) FROM news_sentiment)
       + (SELECT count(*) FROM news_articles) + (SELECT count(*) FROM predictions)
       + (SELECT count(*) FROM training_sessions) + (SELECT count(*) FROM currencies)
       + (SELECT count(*) FROM app.users) + (SELECT count(*) FROM app.profile_pictures)
       + (SELECT count(*) FROM app.portfolios) + (SELECT count(*) FROM app.holdings)
       + (SELECT count(*) FROM app.holding_changes) AS n`;
const storedRows = () => pool.oneFirst(STORED_ROWS);

interface FuzzRequest {
  path: string;
  query: [string, string][];
  contentType?: string;
  body?: string | Uint8Array;
}

const KNOWN: Record<string, () => string> = {
  code: () => 'BTC',
  currencyCode: () => 'BTC',
  id: () => String(userId),
};

function paramArbitrary(doc: OpenApiDocument, param: any): fc.Arbitrary<string> {
  const schema = resolve(doc, param.schema);
  const known = KNOWN[param.name];
  return fc.oneof(
    {
      weight: 3,
      arbitrary: valid(doc, schema).map((v) => (typeof v === 'string' ? v : JSON.stringify(v))),
    },
    { weight: 2, arbitrary: hostileString },
    ...(known ? [{ weight: 2, arbitrary: fc.constant(known()) }] : []),
  );
}

const WRONG_MEDIA_TYPES = [
  'text/plain',
  'application/xml',
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'application/json; charset=utf-16',
  'image/png',
  '',
];

function bodyArbitrary(
  doc: OpenApiDocument,
  requestBody: any,
): fc.Arbitrary<Pick<FuzzRequest, 'contentType' | 'body'>> {
  const content: Record<string, any> = requestBody?.content ?? {};
  const variants: fc.Arbitrary<Pick<FuzzRequest, 'contentType' | 'body'>>[] = [];
  for (const [mediaType, { schema }] of Object.entries(content)) {
    const resolved = resolve(doc, schema);
    if (mediaType === 'multipart/form-data') {
      variants.push(
        fc.tuple(fc.uint8Array({ maxLength: 512 }), hostileString).map(([bytes, name]) => {
          const boundary = 'fuzzboundary';
          const head = `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="${name.slice(0, 40)}"\r\nContent-Type: image/png\r\n\r\n`;
          const body = Buffer.concat([
            Buffer.from(head),
            bytes,
            Buffer.from(`\r\n--${boundary}--\r\n`),
          ]);
          return { contentType: `multipart/form-data; boundary=${boundary}`, body };
        }),
        fc.uint8Array({ maxLength: 256 }).map((bytes) => ({ contentType: mediaType, body: bytes })),
      );
      continue;
    }
    const json = (value: unknown) => ({
      contentType: mediaType,
      body: JSON.stringify(value) ?? 'null',
    });
    variants.push(valid(doc, resolved).map(json), mutated(doc, resolved).map(json));
    // Numbers JSON cannot carry (NaN) or that parse to Infinity, in place of a valid number.
    variants.push(
      valid(doc, resolved).chain((value) =>
        fc.constantFrom('1e999', '-1e999', 'NaN', '0x10', '1e-400', '-0').map((special) => ({
          contentType: mediaType,
          body: (JSON.stringify(value) ?? 'null').replace(
            /(:|\[|,)(-?\d+(\.\d+)?([eE][+-]?\d+)?)/,
            `$1${special}`,
          ),
        })),
      ),
    );
    if (mediaType === 'application/x-ndjson' && resolved.type === 'array') {
      variants.push(
        fc
          .array(
            fc.oneof(
              valid(doc, resolved.items).map((v) => JSON.stringify(v)),
              hostileString,
            ),
            { maxLength: 4 },
          )
          .map((lines) => ({ contentType: mediaType, body: lines.join('\n') })),
      );
    }
  }
  const anyMediaType = Object.keys(content)[0] ?? 'application/json';
  variants.push(
    // Malformed JSON: arbitrary text, truncated documents.
    fc
      .oneof(
        fc.string({ maxLength: 80 }),
        fc.constantFrom('{', '{"a":', '[1,2', '{"a":1}}', "{'a':1}", '\u0000'),
      )
      .map((body) => ({ contentType: anyMediaType, body })),
    // Wrong media types, with a body that would be valid JSON.
    fc
      .tuple(fc.constantFrom(...WRONG_MEDIA_TYPES), fc.jsonValue({ maxDepth: 2 }))
      .map(([contentType, value]) => ({
        contentType: contentType || undefined,
        body: JSON.stringify(value) ?? '',
      })),
    fc.constant({}),
  );
  return fc.oneof(...variants);
}

function requestArbitrary(operation: Operation): fc.Arbitrary<FuzzRequest> {
  const doc = documents[operation.service];
  const params: any[] = operation.op.parameters ?? [];
  const pathParams = params.filter((p) => p.in === 'path');
  const queryParams = params.filter((p) => p.in === 'query');
  const pathArb = fc
    .tuple(...pathParams.map((p) => fc.tuple(paramArbitrary(doc, p), fc.nat(9))))
    .map((values) => {
      let path = operation.path;
      pathParams.forEach((p, i) => {
        const [value, encodeChoice] = values[i]!;
        // Mostly encoded; sometimes raw, so traversal sequences reach the router as they are.
        const placed =
          encodeChoice === 0
            ? value.replaceAll('?', '%3F').replaceAll('#', '%23')
            : encodeURIComponent(value.toWellFormed()); // (a lone surrogate cannot be encoded)
        path = path.replace(`{${p.name}}`, placed);
      });
      return path;
    });
  const queryArb = fc
    .tuple(...queryParams.map((p) => fc.option(paramArbitrary(doc, p), { freq: 3 })))
    .chain((values) =>
      fc.option(fc.tuple(hostileString, hostileString), { freq: 3 }).map((extra) => {
        const query: [string, string][] = [];
        queryParams.forEach((p, i) => {
          if (values[i] !== null) query.push([p.name, values[i]!]);
        });
        if (extra) query.push([extra[0] || 'extra', extra[1]]);
        return query;
      }),
    );
  const bodyArb =
    operation.method === 'GET' ? fc.constant({}) : bodyArbitrary(doc, operation.op.requestBody);
  return fc
    .tuple(pathArb, queryArb, bodyArb)
    .map(([path, query, body]) => ({ path, query, ...body }));
}

async function send(operation: Operation, request: FuzzRequest) {
  const base = operation.service === 'data' ? harness.dataUrl : harness.url;
  const url = new URL(`${base}${request.path}`);
  for (const [key, value] of request.query) url.searchParams.append(key, value);
  const headers: Record<string, string> = {};
  if (operation.service === 'data') headers.authorization = `Bearer ${token}`;
  // Sign-out would end the fuzzing session: those routes run anonymous.
  else if (!operation.path.includes('logout')) {
    headers.cookie = user.cookieHeader();
    headers['x-csrf-token'] = user.jar.get('csrf-token') ?? '';
  }
  if (request.contentType) headers['content-type'] = request.contentType;
  const response = await fetch(url, {
    method: operation.method,
    headers,
    body: request.body as RequestInit['body'],
    signal: AbortSignal.timeout(20_000),
  });
  const text = await response.text();
  return { status: response.status, text, contentType: response.headers.get('content-type') ?? '' };
}

function checkAnswer(
  operation: Operation,
  request: FuzzRequest,
  answer: Awaited<ReturnType<typeof send>>,
) {
  const what = `→ ${answer.status} ${answer.text.slice(0, 300)} for ${operation.method} ${request.path.slice(0, 200)}?${String(new URLSearchParams(request.query)).slice(0, 300)} [${request.contentType}] ${String(request.body ?? '').slice(0, 300)}`;
  if (answer.status >= 500) throw new Error(`server error: ${what}`);
  if (answer.status < 400) return;
  let body: any;
  try {
    body = JSON.parse(answer.text);
  } catch {
    throw new Error(`error without a JSON body: ${what}`);
  }
  const error = body?.error;
  if (
    typeof error?.code !== 'string' ||
    typeof error?.message !== 'string' ||
    !Array.isArray(error?.details)
  ) {
    throw new Error(`error not in the contract's shape: ${what}`);
  }
  // (431: Node refused the request line before the application, which alone knows the session.)
  if (
    operation.path.startsWith('/api/authorize/') &&
    answer.status !== 431 &&
    typeof body.authorized !== 'boolean'
  ) {
    throw new Error(`authorize error without "authorized": ${what}`);
  }
}

test.each(operations.map((o) => [`${o.service} ${o.method} ${o.path}`, o] as const))(
  'fuzz %s',
  async (name, operation) => {
    const writes = operation.method !== 'GET';
    const rowsBefore = await storedRows();
    let count = 0;
    await fc.assert(
      fc.asyncProperty(requestArbitrary(operation), async (request) => {
        count += 1;
        const before = writes ? await storedRows() : 0;
        const answer = await send(operation, request);
        checkAnswer(operation, request, answer);
        if (writes && answer.status >= 400) {
          const after = await storedRows();
          if (after !== before) {
            throw new Error(
              `rejected write changed ${after - before} rows: ${operation.method} ${request.path} → ${answer.status} ${answer.text.slice(0, 200)}`,
            );
          }
        }
      }),
      {
        numRuns: RUNS,
        interruptAfterTimeLimit: ROUTE_MS,
        markInterruptAsFailure: false,
        seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31),
      },
    );
    if (writes) {
      // An oversized body: refused with 413 (or a 4xx for the media type), nothing stored.
      const before = await storedRows();
      const huge = `[${'{"a":"' + 'x'.repeat(1000) + '"},'.repeat(1)}${'1,'.repeat(3_000_000)}1]`;
      const answer = await send(operation, {
        path: operation.path.replace(/\{[^}]+\}/g, '1'),
        query: [],
        contentType: Object.keys(operation.op.requestBody?.content ?? { 'application/json': 1 })[0],
        body: huge,
      });
      count += 1;
      checkAnswer(operation, { path: operation.path, query: [], body: '<6 MB>' }, answer);
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect(await storedRows()).toBe(before);
    } else {
      expect(await storedRows()).toBe(rowsBefore);
    }
    sent.set(name, count);
    expect(count).toBeGreaterThan(10);
  },
  ROUTE_MS + 60_000,
);
