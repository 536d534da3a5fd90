import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import http from 'node:http';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { createDataService } from '../../src/data/service.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { loadConfig } from '../../src/shared/config.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import { serve } from '../support/http.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import {
  ndjson,
  newsEvent,
  post,
  predictionRequest,
  trainingSessionRequest,
} from '../support/signals.ts';

// The body handling every bulk route shares, with small limits so they are cheap to reach.

let runtime: TestRuntime;
let server: RunningServer;
let writeToken: string;
let readToken: string;

const MAX_ITEMS = 5;
const MAX_BYTES = 8192;

beforeAll(async () => {
  runtime = await createTestRuntime({
    SIGNAL_BULK_MAX_ITEMS: String(MAX_ITEMS),
    SIGNAL_BULK_MAX_BYTES: String(MAX_BYTES),
  });
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  writeToken = (await createToken(runtime.pool, 'analysis', ['write'])).token;
  readToken = (await createToken(runtime.pool, 'reader', ['read'])).token;
  server = await serve(createDataService(runtime).app);
});

afterAll(async () => {
  await server.close();
  await runtime.dispose();
});

const routes: Array<[string, () => unknown]> = [
  ['/data/news-sentiment/add/bulk', () => newsEvent()],
  ['/data/predictions/add/bulk', () => predictionRequest()],
  ['/data/training-session/add/bulk', () => trainingSessionRequest(1)],
];

describe.each(routes)('POST %s', (path, item) => {
  const send = (body: unknown, contentType?: string, headers?: Record<string, string>) =>
    post(`${server.url}${path}`, writeToken, body, contentType, headers);

  test('413 that states the item limit, for JSON and NDJSON', async () => {
    const items = Array.from({ length: MAX_ITEMS + 1 }, item);
    for (const [body, type] of [
      [items, 'application/json'],
      [ndjson(items), 'application/x-ndjson'],
    ] as const) {
      const { status, body: answer } = await send(body, type);
      expect(status).toBe(413);
      expect(answer.error.code).toBe('payload_too_large');
      expect(answer.error.message).toContain(`limit is ${MAX_ITEMS} items`);
    }
  });

  test('413 that states the byte limit', async () => {
    const { status, body } = await send([{ padding: 'x'.repeat(MAX_BYTES) }]);
    expect(status).toBe(413);
    expect(body.error.message).toContain(`${MAX_BYTES} bytes`);
  });

  test('413 for a streamed (chunked) body over the limit', async () => {
    const { status, body } = await chunkedPost(path, [
      '[',
      ...Array.from({ length: 20 }, () => `{"padding":"${'y'.repeat(1000)}"},`),
      '{}]',
    ]);
    expect(status).toBe(413);
    expect(JSON.parse(body).error.message).toContain(`${MAX_BYTES} bytes`);
  });

  test('400 for a body that is not JSON, an NDJSON line that is not, or no array', async () => {
    const broken = await send('[{"a": 1},');
    expect(broken.status).toBe(400);
    expect(broken.body.error.code).toBe('invalid_json');
    const line = await send(`${JSON.stringify(item())}\n{oops}\n`, 'application/x-ndjson');
    expect(line.status).toBe(400);
    expect(line.body.error.code).toBe('invalid_json');
    expect(line.body.error.message).toContain('Line 2');
    const object = await send(item());
    expect(object.status).toBe(400);
    expect(object.body.error.message).toMatch(/JSON array/);
  });

  test('415 for another media type or a compressed body', async () => {
    const text = await send(ndjson([item()]), 'text/csv');
    expect(text.status).toBe(415);
    expect(text.body.error.message).toContain('application/x-ndjson');
    const gzip = await send([item()], 'application/json', { 'content-encoding': 'gzip' });
    expect(gzip.status).toBe(415);
  });

  test('401 without a token, 403 with a read-only one', async () => {
    expect((await post(`${server.url}${path}`, '', [item()])).status).toBe(401);
    expect((await post(`${server.url}${path}`, readToken, [item()])).status).toBe(403);
  });
});

test('the limits default to 10,000 items and 10 MiB, and are configurable', () => {
  const defaults = loadConfig({});
  expect(defaults.SIGNAL_BULK_MAX_ITEMS).toBe(10_000);
  expect(defaults.SIGNAL_BULK_MAX_BYTES).toBe(10 * 1024 * 1024);
  expect(() => loadConfig({ SIGNAL_BULK_MAX_ITEMS: '0' })).toThrow(/SIGNAL_BULK_MAX_ITEMS/);
});

/** Sends the parts with chunked transfer encoding, so the server cannot know the size upfront. */
function chunkedPost(path: string, parts: string[]): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${server.url}${path}`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${writeToken}` },
      },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      },
    );
    // The server may answer and close before every part is written.
    request.on('error', reject);
    for (const part of parts) request.write(part);
    request.end();
  });
}
