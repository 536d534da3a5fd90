import { afterAll, beforeAll, expect, test } from '@jest/globals';
import type { Context, Next } from 'koa';
import { z } from 'zod';
import { rateLimit } from '../../src/shared/http/admission.ts';
import { defineRoute, RouteRegistry } from '../../src/shared/http/routes.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import { createHttpService } from '../../src/shared/http/service.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { httpRequestsShed } from '../../src/shared/metrics.ts';
import { serve } from '../support/http.ts';

// A client over a route's rate limit, sending no cookies and no Origin, is refused by the HTTP
// server's request listener before Koa sees the request, with the answer Koa's early refusal
// gives (same status, body and headers); requests with cookies or an Origin still go through
// Koa, whose early refusal judges them.

const limit = rateLimit({
  name: 'before koa test',
  points: 1,
  windowSeconds: 60,
  key: (ctx) => ctx.ip,
});
let enteredKoa = 0;
let server: RunningServer;

beforeAll(async () => {
  const registry = new RouteRegistry();
  registry.add(
    defineRoute({
      method: 'get',
      path: '/limited/{id}',
      operationId: 'limited',
      summary: 'A rate-limited route',
      tags: ['test'],
      params: z.object({ id: z.string() }),
      responses: { 200: { description: 'The thing' } },
      errors: [429],
      shedEarly: {
        limit,
        key: (ctx) => ctx.ip,
        cookielessKey: (clientAddress) => clientAddress,
      },
      before: [limit],
      handler: (ctx) => {
        ctx.body = { ok: true };
      },
    }),
  );
  const service = createHttpService({
    name: 'before-koa-test',
    logger: createLogger('silent'),
    routes: registry,
    openApi: { title: 'test', version: '1', description: 'test' },
    // A refusal's decoration in Koa, and what it gives a request without Origin.
    earlyRefusalMiddleware: [
      async (ctx: Context, next: Next) => {
        ctx.vary('Origin');
        await next();
      },
    ],
    earlyRefusalHeaders: [['Vary', 'Origin']],
  });
  // Counts every request Koa handles, ahead of all of the stack's middleware.
  service.app.middleware.unshift(async (_ctx: Context, next: Next) => {
    enteredKoa++;
    await next();
  });
  server = await serve(service.app);
});

afterAll(async () => {
  await server?.close();
});

async function shedCount(): Promise<number> {
  const { values } = await httpRequestsShed.get();
  return (
    values.find(
      (v) => v.labels.route_group === 'before koa test' && v.labels.reason === 'rate_limited',
    )?.value ?? 0
  );
}

/** The headers that must match between two refusals (not the per-request ones). */
function comparable(headers: Headers): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of headers) {
    if (!['date', 'connection', 'keep-alive', 'x-request-id', 'retry-after'].includes(name)) {
      kept[name] = value;
    }
  }
  return kept;
}

test('over the limit without cookies or Origin: refused before Koa, as Koa would refuse it', async () => {
  const url = `${server.url}/limited/1`;
  const shedBefore = await shedCount();
  expect((await fetch(url)).status).toBe(200);
  expect(enteredKoa).toBe(1);

  const early = await fetch(url, { headers: { 'x-request-id': 'flood-1' } });
  expect(early.status).toBe(429);
  expect(enteredKoa).toBe(1);
  expect(Number(early.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(early.headers.get('x-request-id')).toBe('flood-1');
  expect(await early.json()).toEqual({
    error: { code: 'rate_limited', message: limit.refusalMessage, details: [] },
  });
  // The same spellings the router accepts.
  expect((await fetch(`${server.url}/LIMITED/1/?x=1`)).status).toBe(429);
  const head = await fetch(url, { method: 'HEAD' });
  expect(head.status).toBe(429);
  expect(await head.text()).toBe('');
  expect(enteredKoa).toBe(1);
  expect(await shedCount()).toBe(shedBefore + 3);

  // With a cookie (a session could make it someone else's) it goes through Koa, whose early
  // refusal gives the same answer, headers included.
  const throughKoa = await fetch(url, { headers: { cookie: 'sid=whoever' } });
  expect(enteredKoa).toBe(2);
  expect(throughKoa.status).toBe(429);
  expect(comparable(early.headers)).toEqual(comparable(throughKoa.headers));
  expect(comparable(early.headers)).toMatchObject({
    'content-type': 'application/json; charset=utf-8',
    'x-content-type-options': 'nosniff',
    vary: 'Origin',
  });
  // So does one with an Origin (its CORS headers come from the service's middleware).
  expect((await fetch(url, { headers: { origin: 'https://web.example' } })).status).toBe(429);
  expect(enteredKoa).toBe(3);
  expect(await shedCount()).toBe(shedBefore + 5);

  // Other routes are Koa's.
  expect((await fetch(`${server.url}/health/live`)).status).toBe(200);
  expect(enteredKoa).toBe(4);
});
