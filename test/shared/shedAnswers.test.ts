import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { z } from 'zod';
import { rateLimit, routeGate } from '../../src/shared/http/admission.ts';
import { defineRoute, RouteRegistry } from '../../src/shared/http/routes.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import { createHttpService } from '../../src/shared/http/service.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { serve } from '../support/http.ts';
import { shedTally, untilShedAndTimed, type ShedTally } from '../support/shedAnswers.ts';
import { until } from '../support/wait.ts';

// Every shed answer is counted and timed by the platform itself, whichever point shed it: the
// refusal before Koa, Koa's early refusal, a route's own rate limit, a concurrency gate's full
// queue and its wait that ran out. Timed from the request's arrival at the HTTP server (a wait in
// a gate's queue is part of it), over real HTTP; none of them writes an error line or a stack.

// A queue wait long enough that the time from the arrival cannot be mistaken for the time from
// the refusal, whatever the loop's clock granularity (a timer may fire a little early against a
// clock read before it was set).
const WAIT_MS = 400;
const early = rateLimit({ name: 'early', points: 1, windowSeconds: 60, key: (ctx) => ctx.ip });
const plain = rateLimit({ name: 'plain', points: 1, windowSeconds: 60, key: (ctx) => ctx.ip });
const noQueue = routeGate('no queue', { limit: 1, queueLength: 0, maxWaitMs: 60_000 });
const shortWait = routeGate('short wait', { limit: 1, queueLength: 1, maxWaitMs: WAIT_MS });

const logLines: string[] = [];
let server: RunningServer;
let entered = 0;
let letGo = () => {};
const held = new Promise<void>((resolve) => (letGo = resolve));

function route(path: string, before: Parameters<typeof defineRoute>[0]['before'], hold = false) {
  return defineRoute({
    method: 'get',
    path,
    operationId: path.replace(/\W/g, ''),
    summary: 'A limited route',
    tags: ['test'],
    responses: { 200: { description: 'Done' } },
    errors: [429, 503],
    params: z.object({}),
    before,
    handler: async (ctx) => {
      entered++;
      if (hold) await held;
      ctx.body = { ok: true };
    },
  });
}

beforeAll(async () => {
  const registry = new RouteRegistry();
  registry.add({
    ...route('/early', [early]),
    shedEarly: { limit: early, key: (ctx) => ctx.ip, cookielessKey: (address) => address },
  });
  registry.add(route('/plain', [plain]));
  registry.add(route('/no-queue', [noQueue], true));
  registry.add(route('/short-wait', [shortWait], true));
  const service = createHttpService({
    name: 'shed-answers-test',
    logger: createLogger('debug', { write: (line: string) => logLines.push(line) }, 'json'),
    routes: registry,
    openApi: { title: 'test', version: '1', description: 'test' },
  });
  server = await serve(service.app);
});

afterAll(async () => {
  letGo();
  await server?.close();
});

function expectShedAnswer(answer: Response, status: number) {
  expect(answer.status).toBe(status);
  expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

async function expectCountedAndTimed(group: string, reason: string, before: ShedTally, n: number) {
  const after = await untilShedAndTimed(group, reason, before, n);
  expect({ shed: after.shed - before.shed, timed: after.timed - before.timed }).toEqual({
    shed: n,
    timed: n,
  });
  return after;
}

test('every series starts at 0, with its limit', async () => {
  for (const [group, reasons] of [
    ['early', ['rate_limited']],
    ['plain', ['rate_limited']],
    ['no queue', ['queue_full', 'waited_too_long', 'client_gone']],
  ] as const) {
    for (const reason of reasons) {
      expect({ group, reason, ...(await shedTally(group, reason)) }).toEqual({
        group,
        reason,
        shed: 0,
        timed: 0,
        seconds: 0,
        declared: true,
      });
    }
  }
});

test('refusals of a client over its rate, before Koa, in Koa and by the route, are timed', async () => {
  const earlyBefore = await shedTally('early', 'rate_limited');
  expect((await fetch(`${server.url}/early`)).status).toBe(200);
  // Without cookies: the HTTP server's listener refuses it; with one, Koa's early refusal.
  expectShedAnswer(await fetch(`${server.url}/early`), 429);
  expectShedAnswer(await fetch(`${server.url}/early`, { headers: { cookie: 'a=b' } }), 429);
  await expectCountedAndTimed('early', 'rate_limited', earlyBefore, 2);

  const plainBefore = await shedTally('plain', 'rate_limited');
  expect((await fetch(`${server.url}/plain`)).status).toBe(200);
  expectShedAnswer(await fetch(`${server.url}/plain`), 429);
  await expectCountedAndTimed('plain', 'rate_limited', plainBefore, 1);
});

test("a gate's full queue and a wait that ran out are timed from the request's arrival", async () => {
  const enteredBefore = entered;
  const holders = [fetch(`${server.url}/no-queue`), fetch(`${server.url}/short-wait`)];
  await until(async () => entered === enteredBefore + 2, 30_000, 'both places taken');

  const fullBefore = await shedTally('no queue', 'queue_full');
  expectShedAnswer(await fetch(`${server.url}/no-queue`), 503);
  await expectCountedAndTimed('no queue', 'queue_full', fullBefore, 1);

  const waitBefore = await shedTally('short wait', 'waited_too_long');
  expectShedAnswer(await fetch(`${server.url}/short-wait`), 503);
  const waited = await expectCountedAndTimed('short wait', 'waited_too_long', waitBefore, 1);
  // The wait in the queue is inside the time: it runs from the arrival, not from the refusal.
  expect(waited.seconds - waitBefore.seconds).toBeGreaterThanOrEqual(WAIT_MS / 2 / 1000);

  letGo();
  for (const holder of await Promise.all(holders)) expect(holder.status).toBe(200);
});

test('shed answers write no error line and no stack', async () => {
  const parsed = logLines.map((line) => JSON.parse(line) as { level: number; status?: number });
  const shedLines = parsed.filter((line) => line.status === 503 || line.status === 429);
  // The gates' two 503s are access-logged (Koa answered them); the rate refusals too, but
  // the early ones (before Koa and Koa's early refusal) are only counted.
  expect(shedLines.length).toBeGreaterThanOrEqual(2);
  expect(parsed.filter((line) => line.level >= 50)).toEqual([]);
  expect(logLines.filter((line) => line.includes('"stack"'))).toEqual([]);
});
