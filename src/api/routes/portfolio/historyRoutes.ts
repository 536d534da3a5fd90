import type { Context, Middleware } from 'koa';
import type { DatabasePool } from 'slonik';
import { NotFoundError } from '../../../shared/errors.ts';
import { assertWithinPointCap, maxBucketsOverHours } from '../../../shared/time/bucketGrid.ts';
import { defineRoute, type RouteRegistry } from '../../../shared/http/routes.ts';
import type { DataClient } from '../../dataClient.ts';
import {
  assetHistory,
  portfolioHistory,
  type AssetHistoryPoint,
  type HistoryInput,
} from '../../portfolio/history.ts';
import { codeOfKey } from '../../currencyKeys.ts';
import { priceHistories } from '../../portfolio/priceHistories.ts';
import { changesOf, holdingsOf, portfolioOf } from '../../portfolio/holdings.ts';
import { unrealisedProfit } from '../../portfolio/valuation.ts';
import { requireUser, signedInUser } from '../../session/requireUser.ts';
import { sessionSecurity } from '../security.ts';
import { PORTFOLIO_TAG } from './portfolioRoutes.ts';
import { historyWindowQuery } from '../../../shared/http/queryParams.ts';
import {
  assetHistorySchema,
  assetParams,
  portfolioHistorySchema,
  profitParams,
  valueSchema,
} from './schema.ts';
import { z } from 'zod';

export interface HistoryRouteDeps {
  pool: DatabasePool;
  data: DataClient;
  maxPoints: number;
  /** Per-client rate limit of history reads. */
  limitRate: Middleware;
}

export function registerHistoryRoutes(registry: RouteRegistry, deps: HistoryRouteDeps) {
  registry.add(
    defineRoute({
      method: 'get',
      path: '/api/portfolio/history/get',
      operationId: 'portfolioHistory',
      cancelWhenAbandoned: true,
      summary: 'Value of the portfolio over time',
      description:
        'Epoch-aligned buckets of `intervalSeconds` over the last `hours`, from the first bucket the ' +
        'portfolio existed in. Each point values the holdings at the end of its bucket at the bucket’s ' +
        'first price (else the latest earlier price), so backfilled prices count at once.',
      tags: PORTFOLIO_TAG,
      security: sessionSecurity,
      before: [requireUser, deps.limitRate],
      query: historyWindowQuery,
      responses: {
        200: { description: 'Points, oldest first', schema: z.array(portfolioHistorySchema) },
        204: { description: 'The portfolio has no history yet' },
      },
      errors: [401, 429, 503],
      handler: async (ctx, { query }) => {
        const window = await historyWindow(ctx, deps, query);
        const points = window && portfolioHistory(window);
        if (!points || points.length === 0) {
          ctx.status = 204;
          return;
        }
        ctx.body = points;
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'get',
      path: '/api/portfolio/history/profit',
      operationId: 'portfolioProfit',
      summary: 'Unrealised gain of the whole portfolio',
      description: 'Σ shares × (current price − price when acquired).',
      tags: PORTFOLIO_TAG,
      security: sessionSecurity,
      before: [requireUser],
      responses: { 200: { description: 'Profit in USD', schema: valueSchema } },
      errors: [401, 503],
      handler: async (ctx) => {
        const portfolio = await portfolioOf(deps.pool, signedInUser(ctx));
        const held = (await holdingsOf(deps.pool, portfolio.id)).filter((h) => h.shares > 0);
        const prices = held.length > 0 ? await deps.data.currentPrices() : new Map();
        ctx.body = { value: unrealisedProfit(held, prices) };
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'get',
      path: '/api/portfolio/history/profit/{currencyCode}',
      operationId: 'portfolioProfitOf',
      summary: 'Unrealised gain of one holding',
      description: 'The currency by code or (older clients) by name.',
      tags: PORTFOLIO_TAG,
      security: sessionSecurity,
      before: [requireUser],
      params: profitParams,
      responses: { 200: { description: 'Profit in USD', schema: valueSchema } },
      errors: [401, 404, 503],
      handler: async (ctx, { params }) => {
        const code = await codeOfKey(deps.data, params.currencyCode);
        const portfolio = await portfolioOf(deps.pool, signedInUser(ctx));
        const holding = (await holdingsOf(deps.pool, portfolio.id)).find(
          (h) => h.currencyCode === code && h.shares > 0,
        );
        if (!holding) {
          throw new NotFoundError(`The portfolio holds no ${params.currencyCode}`, 'not_held');
        }
        ctx.body = { value: unrealisedProfit([holding], await deps.data.currentPrices()) };
      },
    }),
  );

  const assetRoute = {
    method: 'get' as const,
    summary: 'Each holding’s value over time (older web client)',
    description:
      'On the grid and prices of /api/portfolio/history/get: one point per asset per bucket, from ' +
      'the asset’s first change; oldest first, then by asset. An empty list (never 204) when ' +
      'there is nothing to show.',
    tags: PORTFOLIO_TAG,
    security: sessionSecurity,
    before: [requireUser],
    query: historyWindowQuery,
    responses: { 200: { description: 'Points', schema: z.array(assetHistorySchema) } },
  };

  registry.add(
    defineRoute({
      ...assetRoute,
      path: '/api/portfolio/history/get/asset',
      operationId: 'assetHistory',
      cancelWhenAbandoned: true,
      errors: [400, 401, 503],
      handler: async (ctx, { query }) => {
        const window = await historyWindow(ctx, deps, query);
        ctx.body = window ? await named(deps.data, assetHistory(window)) : [];
      },
    }),
  );

  registry.add(
    defineRoute({
      ...assetRoute,
      path: '/api/portfolio/history/get/asset/{currencyName}',
      operationId: 'assetHistoryOf',
      cancelWhenAbandoned: true,
      summary: 'One holding’s value over time (older web client); the currency by name or code',
      params: assetParams,
      errors: [400, 401, 404, 503],
      handler: async (ctx, { params, query }) => {
        const code = await codeOfKey(deps.data, params.currencyName);
        const window = await historyWindow(ctx, deps, query, code);
        ctx.body = window ? await named(deps.data, assetHistory(window)) : [];
      },
    }),
  );
}

/**
 * The signed-in user's changes and the price histories a history answer needs, or undefined
 * when the portfolio has no change yet. `onlyCode` keeps one currency's changes.
 */
async function historyWindow(
  ctx: Context,
  deps: HistoryRouteDeps,
  query: { hours: number; intervalSeconds: number },
  onlyCode?: string,
): Promise<HistoryInput | undefined> {
  const intervalMs = query.intervalSeconds * 1000;
  const to = Date.now();
  const from = to - query.hours * 3_600_000;
  // The data module's rule, so that it never refuses the price histories asked below.
  assertWithinPointCap(maxBucketsOverHours(query.hours, query.intervalSeconds), deps.maxPoints, {
    parameter: 'intervalSeconds',
    advice: 'use a larger intervalSeconds',
  });
  const portfolio = await portfolioOf(deps.pool, signedInUser(ctx));
  const all = await changesOf(deps.pool, portfolio.id, new Date(to));
  const changes = onlyCode ? all.filter((c) => c.currencyCode === onlyCode) : all;
  if (changes.length === 0) return undefined;
  const prices = await priceHistories(deps.data, changes, {
    hours: query.hours,
    intervalSeconds: query.intervalSeconds,
    from,
    to,
    maxPoints: deps.maxPoints,
  });
  return { changes, prices, from, to, intervalMs };
}

/** Adds each point's currency name (the code when the currency has no price any more). */
async function named(data: DataClient, points: AssetHistoryPoint[]) {
  if (points.length === 0) return [];
  const prices = await data.currentPrices();
  return points.map((p) => ({
    ...p,
    currencyName: prices.get(p.currencyCode)?.currencyName ?? p.currencyCode,
  }));
}
