import type { Context, Middleware } from 'koa';
import { z } from 'zod';
import { NotFoundError } from '../../../shared/errors.ts';
import { assertWithinPointCap, maxBucketsOverHours } from '../../../shared/time/bucketGrid.ts';
import { defineRoute, type RouteRegistry } from '../../../shared/http/routes.ts';
import type { EarlyRefusal } from '../../../shared/http/shedEarly.ts';
import type { AnonymousReadBudget } from '../../anonymousReads.ts';
import type { DisplayCurrency } from '../../dataAnswers.ts';
import type { DataClient } from '../../dataClient.ts';
import { historyWindowQuery } from '../../../shared/http/queryParams.ts';
import { findCurrency } from '../../currencyKeys.ts';
import { performanceOf } from '../../performance.ts';
import {
  candleParams,
  candleQuery,
  candleSchema,
  currencyListSchema,
  historyParams,
  performanceParams,
  performanceSchema,
  timeValueSchema,
} from './schema.ts';

// Market data for the web client (the price table and charts of the dashboard), read from the
// data module with the API's token: browsers never see the data module or its tokens.

export interface MarketRouteDeps {
  data: DataClient;
  maxPoints: number;
  /** Per-client rate limit of history reads (anonymous callers strictest). */
  limitRate: Middleware;
  /** The anonymous part of that limit, read before the rest of the stack. */
  anonymousOverLimit: EarlyRefusal;
  /** What anonymous reads in progress may ask for together. */
  anonymousReads: AnonymousReadBudget;
}

export function registerMarketRoutes(registry: RouteRegistry, deps: MarketRouteDeps) {
  // The list's answer, encoded once per snapshot the data client keeps (the same Map object for
  // as long as it is reused: until a change of the prices is heard).
  const encodedLists = new WeakMap<ReadonlyMap<string, DisplayCurrency>, Buffer>();
  registry.add(
    defineRoute({
      method: 'get',
      path: '/api/currency/all',
      operationId: 'currencyList',
      summary: 'Every priced currency with its current value, highest first',
      description: 'Live changes arrive as `price` events on the Socket.IO namespace /trader.',
      tags: ['currency'],
      responses: { 200: { description: 'The currencies', schema: currencyListSchema } },
      errors: [503],
      handler: async (ctx) => {
        const prices = await deps.data.currentPrices();
        let encoded = encodedLists.get(prices);
        if (!encoded) {
          const currencies = [...prices.values()].sort((a, b) => b.value - a.value);
          encoded = Buffer.from(JSON.stringify({ currencies }));
          encodedLists.set(prices, encoded);
        }
        ctx.type = 'application/json';
        ctx.body = encoded;
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'get',
      path: '/api/currency/performance/{code}',
      operationId: 'currencyPerformance',
      summary: 'Up, down or neutral over the last 24 hours (the cards of the older web client)',
      description:
        'The current price against the price 24 hours earlier: the `change24h` of /api/currency/all ' +
        '(same snapshot, same numbers), rounded to two decimals. `neutral` and `0.00%` when there ' +
        'is no price 24 hours back or the rounded change is zero. The currency by code or name.',
      tags: ['currency'],
      params: performanceParams,
      responses: { 200: { description: 'The rating', schema: performanceSchema } },
      errors: [404, 503],
      handler: async (ctx, { params }) => {
        const currency = await findCurrency(deps.data, params.code);
        if (!currency) {
          throw new NotFoundError(`Unknown currency '${params.code}'`, 'unknown_currency');
        }
        ctx.body = performanceOf(currency.change24h);
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'get',
      path: '/api/currency/history/{code}',
      operationId: 'currencyHistory',
      cancelWhenAbandoned: true,
      shedEarly: deps.anonymousOverLimit,
      before: [deps.limitRate],
      summary: 'Price history of a currency at a chosen resolution',
      description:
        'Epoch-aligned buckets of `intervalSeconds` over the last `hours`, each stamped with its ' +
        'start and carrying the first price observed in it; empty buckets are left out.',
      tags: ['currency'],
      params: historyParams,
      query: historyWindowQuery,
      responses: {
        200: { description: 'Points, oldest first', schema: z.array(timeValueSchema) },
        204: { description: 'No price in the window' },
      },
      errors: [400, 404, 429, 503],
      handler: async (ctx, { params, query }) => {
        await assertWindowAnswerable(deps, ctx, params.code, query);
        // The data module's answer is this route's, byte for byte: passed on as it arrives, not
        // parsed and encoded again on the API's event loop (tens of thousands of points).
        const answer = await deps.data.historyJson(params.code, query.hours, query.intervalSeconds);
        if (!answer) {
          ctx.status = 204;
          return;
        }
        ctx.type = 'application/json';
        if (answer.length !== undefined) ctx.length = answer.length;
        ctx.body = answer.body;
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'get',
      path: '/api/currency/candles/{code}',
      operationId: 'currencyCandles',
      cancelWhenAbandoned: true,
      summary: 'OHLCV candles of a currency (the chart of the dashboard)',
      description:
        'The data module’s candles over the last `hours`, `intervalSeconds` wide, stamped with ' +
        'their start; with `tz`, candles of a day or more start at that zone’s midnight. Empty ' +
        'buckets are left out.',
      tags: ['currency'],
      params: candleParams,
      query: candleQuery,
      responses: {
        200: { description: 'Candles, oldest first', schema: z.array(candleSchema) },
        204: { description: 'No price in the window' },
      },
      errors: [400, 404, 503],
      handler: async (ctx, { params, query }) => {
        await assertWindowAnswerable(deps, ctx, params.code, query, query.tz);
        const candles = await deps.data.candles(params.code, {
          hours: query.hours,
          intervalSeconds: query.intervalSeconds,
          ...(query.tz ? { timeZone: query.tz } : {}),
        });
        const filled = candles.filter((c) => c.count > 0 && c.open !== null);
        if (filled.length === 0) {
          ctx.status = 204;
          return;
        }
        ctx.body = filled.map((c) => ({
          timestamp: c.timestamp,
          open: c.open,
          high: c.high,
          low: c.low,
          close: c.close,
          volume: c.volume,
        }));
      },
    }),
  );
}

/**
 * What the history and candle routes check before asking the data module: the window's points
 * within the cap (400 naming intervalSeconds; candles counted in their zone), a currency that has
 * a price (404), and, for an anonymous caller, room for those points among the anonymous reads in
 * progress (503).
 */
async function assertWindowAnswerable(
  deps: MarketRouteDeps,
  ctx: Context,
  code: string,
  window: { hours: number; intervalSeconds: number },
  timeZone?: string,
) {
  // The data module's own count (a day in a zone may last 25 hours), so what passes here passes there.
  const points = maxBucketsOverHours(window.hours, window.intervalSeconds, timeZone);
  assertWithinPointCap(points, deps.maxPoints, {
    parameter: 'intervalSeconds',
    advice: 'use a larger intervalSeconds',
  });
  if (!(await deps.data.currentPrice(code))) {
    throw new NotFoundError(`Unknown currency '${code}'`, 'unknown_currency');
  }
  deps.anonymousReads.admit(ctx, points);
}
