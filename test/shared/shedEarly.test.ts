import { afterAll, beforeAll, expect, test } from '@jest/globals';
import type { Context, Next } from 'koa';
import { z } from 'zod';
import { rateLimit, routeGate } from '../../src/shared/http/admission.ts';
import { defineRoute, RouteRegistry } from '../../src/shared/http/routes.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import { createHttpService } from '../../src/shared/http/service.ts';
import { createLogger } from '../../src/shared/logger.ts';
import {
  httpRequestDuration,
  httpRequestsShed,
  metricsRegistry,
} from '../../src/shared/metrics.ts';
import { getJson, serve } from '../support/http.ts';

// A route's rate limit read at the top of the stack: a client already over it is answered 429
// before the service's middleware (sessions, cross-site guard), body parsing and routing run,
// with the same answer the route's own limit gives, and is counted in the metrics.

const limit = rateLimit({
  name: 'early test',
  points: 2,
  windowSeconds: 60,
  key: (ctx) => ctx.get('x-client'),
});
let reachedServiceMiddleware = 0;
let server: RunningServer;

beforeAll(async () => {
  const registry = new RouteRegistry();
  registry.add(
    defineRoute({
      method: 'get',
      path: '/things/{id}',
      operationId: 'thing',
      summary: 'A rate-limited route',
      tags: ['test'],
      params: z.object({ id: z.string() }),
      responses: { 200: { description: 'The thing' } },
      errors: [429],
      // Clients naming themselves are judged early; the others only by the route's limit.
      shedEarly: { limit, key: (ctx) => ctx.get('x-client') || undefined },
      before: [limit],
      handler: (ctx) => {
        ctx.body = { ok: true };
      },
    }),
  );
  const service = createHttpService({
    name: 'early-test',
    logger: createLogger('silent'),
    routes: registry,
    openApi: { title: 'test', version: '1', description: 'test' },
    middleware: [
      async (_ctx: Context, next: Next) => {
        reachedServiceMiddleware++;
        await next();
      },
    ],
  });
  server = await serve(service.app);
});

afterAll(async () => {
  await server?.close();
});

async function shedCount(): Promise<number> {
  const { values } = await httpRequestsShed.get();
  return (
    values.find((v) => v.labels.route_group === 'early test' && v.labels.reason === 'rate_limited')
      ?.value ?? 0
  );
}

async function refusedHistogramCount(): Promise<number> {
  const { values } = await httpRequestDuration.get();
  return (
    values.find(
      (v) =>
        v.metricName === 'http_server_request_duration_seconds_count' &&
        v.labels.service === 'early-test' &&
        v.labels.route === '/things/:id' &&
        v.labels.status_code === '429',
    )?.value ?? 0
  );
}

test('a client over the limit is refused before the rest of the stack, with the route limit’s answer', async () => {
  const shedBefore = await shedCount();
  const thing = (client: string, path = '/things/1') =>
    getJson(`${server.url}${path}`, undefined, { headers: { 'x-client': client } });

  expect((await thing('a')).status).toBe(200);
  expect((await thing('a')).status).toBe(200);
  expect(reachedServiceMiddleware).toBe(2);

  const early = await thing('a');
  expect(early.status).toBe(429);
  expect(Number(early.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(early.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(early.headers.get('x-content-type-options')).toBe('nosniff');
  expect(early.headers.get('x-request-id')).toBeTruthy();
  expect(early.body).toEqual({
    error: { code: 'rate_limited', message: limit.refusalMessage, details: [] },
  });
  // Spellings the router accepts are refused the same way.
  expect((await thing('a', '/THINGS/1/')).status).toBe(429);
  expect(reachedServiceMiddleware).toBe(2);
  expect(await shedCount()).toBe(shedBefore + 2);
  expect(await refusedHistogramCount()).toBe(2);

  // Another client is not refused; one the early check cannot judge goes through the stack and
  // is refused by the route's own limit, with the same answer.
  expect((await thing('b')).status).toBe(200);
  const late = await getJson(`${server.url}/things/1`, undefined, {
    headers: { 'x-client': '' },
  });
  expect(reachedServiceMiddleware).toBe(4);
  expect(late.status).toBe(200);
});

test('the route limit counts its own refusals in the shed counter', async () => {
  const before = await shedCount();
  const anonymous = () => getJson(`${server.url}/things/2`);
  // The empty key has its own budget of 2; the first was spent above.
  expect((await anonymous()).status).toBe(200);
  const refused = await anonymous();
  expect(refused.status).toBe(429);
  expect(refused.body.error.message).toBe(limit.refusalMessage);
  expect(await shedCount()).toBe(before + 1);
});

test('shed series exist at 0 from the start, so a first refusal shows as a rate', async () => {
  rateLimit({ name: 'never refused', points: 5, windowSeconds: 60, key: () => 'x' });
  routeGate('never busy', { limit: 1, queueLength: 1, maxWaitMs: 10 });
  const text = await metricsRegistry.getSingleMetricAsString('http_requests_shed_total');
  expect(text).toContain(
    'http_requests_shed_total{route_group="never refused",reason="rate_limited"} 0',
  );
  for (const reason of ['queue_full', 'waited_too_long', 'client_gone']) {
    expect(text).toContain(
      `http_requests_shed_total{route_group="never busy",reason="${reason}"} 0`,
    );
  }
});
