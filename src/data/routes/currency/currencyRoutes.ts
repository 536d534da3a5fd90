import { sql } from 'slonik';
import { z } from 'zod';
import { historyWindowQuery } from '../../../shared/http/queryParams.ts';
import { assertWithinPointCap, maxBucketsOverHours } from '../../../shared/time/bucketGrid.ts';
import type { ReadRouter } from '../../../shared/db/readRouter.ts';
import { defineRoute, type RouteRegistry } from '../../../shared/http/routes.ts';
import { bearerSecurity, type ScopeGuard } from '../../auth.ts';
import { queryOpensJson } from '../../history/candleQuery.ts';
import { dayFields, type DayStatsCache } from '../../history/dayStats.ts';
import type { RunCache } from '../../history/runCache.ts';
import {
  currencyListQuery,
  displayCurrencyListSchema,
  historyParams,
  timeValueSchema,
} from './schema.ts';
import { respondWithJsonPieces } from '../jsonPieces.ts';
import type { ReadGates } from '../../readGates.ts';

export interface CurrencyRouteDeps {
  /** The snapshot and history: a replica close enough to the primary, else the primary. */
  reads: ReadRouter;
  gates: ReadGates;
  requireScope: ScopeGuard;
  maxPoints: number;
  /** Settled runs of history answers kept between requests; none when turned off. */
  historyCache?: RunCache;
  /** The 24-hour statistics, computed once per harvest cycle. */
  dayStats: DayStatsCache;
}

const displayRow = z.object({
  currencyName: z.string(),
  currencyCode: z.string(),
  value: z.number(),
  lastUpdated: z.date(),
  latest: z.date(),
});

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
        'They are computed once per harvest cycle.',
      tags: ['currency'],
      security: bearerSecurity('read'),
      before: [deps.requireScope('read')],
      query: currencyListQuery,
      responses: {
        200: { description: 'Snapshot of current values', schema: displayCurrencyListSchema },
      },
      errors: [401, 403, 503],
      handler: async (ctx, { query }) => {
        // The rows and the statistics of one server, so they describe the same moment.
        const { rows, stats } = await deps.reads.quick(async (db) => {
          const rows = await db.any(sql.type(displayRow)`
            SELECT c.name AS "currencyName", c.code AS "currencyCode",
                   s.price AS value, s.observed_at AS "lastUpdated",
                   max(s.observed_at) OVER () AS latest
            FROM currency_snapshots s JOIN currencies c ON c.code = s.currency_code
            ORDER BY s.price DESC, c.code
            LIMIT ${query.limit} OFFSET ${query.offset}
          `);
          return { rows, stats: await deps.dayStats.get(rows[0]?.latest.getTime() ?? 0, db) };
        });
        ctx.body = {
          currencies: rows.map(({ latest: _latest, ...row }) => ({
            ...row,
            logoUrl: `/assets/cryptofont/${row.currencyCode.toLowerCase()}.svg`,
            lastUpdated: row.lastUpdated.toISOString(),
            ...dayFields(row.value, stats.get(row.currencyCode)),
          })),
        };
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
