import { z } from 'zod';
import type { ReadRouter } from '../../../shared/db/readRouter.ts';
import { historyWindowQuery } from '../../../shared/http/queryParams.ts';
import { assertWithinPointCap, maxBucketsOverHours } from '../../../shared/time/bucketGrid.ts';
import { defineRoute, type RouteRegistry } from '../../../shared/http/routes.ts';
import { bearerSecurity, type ScopeGuard } from '../../auth.ts';
import { queryOpensJson } from '../../history/candleQuery.ts';
import type { RunCache } from '../../history/runCache.ts';
import {
  currencyListQuery,
  displayCurrencyListSchema,
  historyParams,
  timeValueSchema,
} from './schema.ts';
import { respondWithJsonPieces } from '../jsonPieces.ts';
import type { SnapshotCache } from './snapshotCache.ts';
import type { ReadGates } from '../../readGates.ts';

export interface CurrencyRouteDeps {
  /** History: a replica close enough to the primary, else the primary's read pool. */
  reads: ReadRouter;
  gates: ReadGates;
  requireScope: ScopeGuard;
  maxPoints: number;
  /** Settled runs of history answers kept between requests; none when turned off. */
  historyCache?: RunCache;
  /** The list of current values, encoded once per change. */
  snapshot: SnapshotCache;
}

export function registerCurrencyRoutes(registry: RouteRegistry, deps: CurrencyRouteDeps) {
  registry.add(
    defineRoute({
      method: 'get',
      path: '/data/currency/all',
      operationId: 'listCurrencies',
      summary: 'Current value of every tracked currency, highest first',
      description:
        'Each item carries the statistics of the last 24 hours, from the rollups: `open24h` (the ' +
        'first price of the window), `high24h`, `low24h`, `volume24h` and `change24h` (the current ' +
        'value against `open24h`, in percent); null when the currency has no price in the window. ' +
        'They are computed once per harvest cycle. The list is encoded once per change of the ' +
        'prices and answered from memory; `Cache-Control: no-cache` on the request makes sure ' +
        'every change committed before it is included.',
      tags: ['currency'],
      security: bearerSecurity('read'),
      before: [deps.requireScope('read')],
      query: currencyListQuery,
      responses: {
        200: { description: 'Snapshot of current values', schema: displayCurrencyListSchema },
      },
      errors: [401, 403, 503],
      handler: async (ctx, { query }) => {
        // `Cache-Control: no-cache` (the API sends it with each read of the list, which it makes
        // after hearing a change itself): every change committed before the request is
        // reflected, even one this instance has not heard of yet.
        const fresh = /\bno-cache\b/i.test(ctx.get('cache-control'));
        const { items, whole } = await deps.snapshot.current({ fresh });
        if (query.offset === 0 && query.limit >= items.length) {
          ctx.type = 'application/json';
          ctx.body = whole;
          return;
        }
        const page = items.slice(query.offset, query.offset + query.limit);
        respondWithJsonPieces(ctx, ['{"currencies":[', page.join(','), ']}']);
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'get',
      path: '/data/currency/history/{code}',
      operationId: 'currencyHistory',
      cancelWhenAbandoned: true,
      summary: 'Price history of a currency at a chosen spacing',
      description:
        'Buckets are aligned to the Unix epoch, each stamped with its start; `value` is the first price ' +
        'observed in the bucket and empty buckets are left out. Answers over the point cap are refused ' +
        'with 400: use the export route for those.',
      tags: ['currency'],
      security: bearerSecurity('read'),
      before: [deps.requireScope('read'), deps.gates.history],
      params: historyParams,
      query: historyWindowQuery,
      responses: {
        200: { description: 'Points in ascending time order', schema: z.array(timeValueSchema) },
        204: { description: 'No data in the window' },
      },
      errors: [401, 403, 404, 503],
      handler: async (ctx, { params, query }) => {
        assertWithinPointCap(
          maxBucketsOverHours(query.hours, query.intervalSeconds),
          deps.maxPoints,
          {
            parameter: 'intervalSeconds',
            advice: 'use a larger intervalSeconds or the streaming export route',
          },
        );
        const to = new Date();
        const from = new Date(to.getTime() - query.hours * 3_600_000);
        // The first price of each bucket is its candle's open, so the rollup planner answers.
        const answer = await deps.reads.expensive((db) =>
          queryOpensJson(
            db,
            { code: params.code, from, to, intervalSeconds: query.intervalSeconds },
            { requireCurrency: true, cache: deps.historyCache },
          ),
        );
        if (answer.empty) {
          ctx.status = 204;
          return;
        }
        respondWithJsonPieces(ctx, answer.pieces);
      },
    }),
  );
}
