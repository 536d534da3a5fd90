import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { createDataService } from '../../src/data/service.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import { getJson, serve } from '../support/http.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

// The README documents POST /data/prices/bulk with a request and its answer: both are read from
// the README and replayed against the real route, so the documented shape cannot drift.

function readmeExample(): { request: unknown; answer: Record<string, unknown> } {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const start = readme.indexOf('**HTTP**: `POST /data/prices/bulk`');
  const section = readme.slice(start, readme.indexOf('\n- ', start + 1));
  const blocks = [...section.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!));
  expect(blocks).toHaveLength(2);
  return { request: blocks[0], answer: blocks[1] };
}

let runtime: TestRuntime;
let server: RunningServer;
let token: string;

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  token = (await createToken(runtime.pool, 'loader', ['write'])).token;
  server = await serve(createDataService(runtime).app);
});

afterAll(async () => {
  await server.close();
  await runtime.dispose();
});

describe('README example of POST /data/prices/bulk', () => {
  test('the documented request gets exactly the documented answers', async () => {
    const { request, answer } = readmeExample();
    const post = () =>
      getJson(`${server.url}/data/prices/bulk`, token, {
        method: 'POST',
        body: JSON.stringify(request),
        headers: { 'content-type': 'application/json' },
      });
    const first = await post();
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ ...answer, accepted: 1, inserted: 1, duplicates: 0 });
    const second = await post();
    expect(second.status).toBe(200);
    expect(second.body).toEqual(answer);
  });
});
