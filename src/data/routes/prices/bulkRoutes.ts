import type pg from 'pg';
import { defineRoute, type RouteRegistry } from '../../../shared/http/routes.ts';
import { bearerSecurity, type ScopeGuard } from '../../auth.ts';
import { candleProblem, latestAcceptedMicros } from '../../ingest/candleValidation.ts';
import { CodeResolver } from '../../ingest/codes.ts';
import { knownCurrencyCodes, pooledConnection } from '../../ingest/connection.ts';
import { loadUnit } from '../../ingest/loader.ts';
import { RangeTracker } from '../../ingest/rangeTracker.ts';
import { candleFromObject } from '../../ingest/readers/lineParsers.ts';
import { TimeParser } from '../../ingest/timeParsing.ts';
import {
  BULK_BODY_TYPES,
  describeBulkLimits,
  readBulkItems,
  type BulkLimits,
} from '../../signals/bulkBody.ts';
import type { Candle } from '../../ingest/types.ts';
import type { Rejection } from '../../signals/bulkOutcome.ts';
import { bulkBodySchema, bulkResultSchema } from './schema.ts';

export interface PriceBulkRouteDeps {
  pgPool: pg.Pool;
  requireScope: ScopeGuard;
  limits: BulkLimits;
  maxFutureSeconds: number;
}

export function registerPriceBulkRoutes(registry: RouteRegistry, deps: PriceBulkRouteDeps) {
  const connect = pooledConnection(deps.pgPool);
  registry.add(
    defineRoute({
      method: 'post',
      path: '/data/prices/bulk',
      operationId: 'bulkPrices',
      summary: 'Store many candles or ticks at once (JSON array or NDJSON)',
      description:
        'Items are checked one by one: a malformed item or an unknown currency is reported in ' +
        '`rejections` with its index and reason (400, or 422 for an unknown currency), the others ' +
        'are stored. The answer has the shape of every bulk route; `inserted` repeats `accepted`. A currency and time already ' +
        'stored keeps its row (counted in `duplicates`), so sending the same items twice adds ' +
        `nothing. Written ranges are marked for the rollups. ${describeBulkLimits(deps.limits)}`,
      tags: ['prices'],
      security: bearerSecurity('write'),
      before: [deps.requireScope('write')],
      body: bulkBodySchema,
      bodyTypes: BULK_BODY_TYPES,
      rawBody: true,
      responses: {
        200: { description: 'Counts and the rejected items', schema: bulkResultSchema },
      },
      errors: [401, 403, 413, 415, 503],
      handler: async (ctx) => {
        const body = await readBulkItems(ctx, deps.limits);
        const connection = await connect();
        let broken: Error | undefined;
        try {
          const codes = new CodeResolver(await knownCurrencyCodes(connection.client));
          const time = new TimeParser();
          const latest = latestAcceptedMicros(Date.now(), deps.maxFutureSeconds);
          const candles: Candle[] = [];
          const rejections: Rejection[] = [];
          const tracker = new RangeTracker();
          body.forEach((item, index) => {
            const candle = candleFromObject(item, index, codes, time);
            const problem = typeof candle === 'string' ? candle : candleProblem(candle, latest);
            if (problem !== null || typeof candle === 'string') {
              rejections.push(rejectionFor(index, problem ?? 'invalid item'));
              return;
            }
            candles.push(candle);
            tracker.add(candle.code, candle.timeUs);
          });
          const result = await loadUnit(connection.client, {
            key: null,
            kind: 'file',
            label: 'request',
            source: 'bulk',
            // The refused items go along so the ingest totals count them with the rest.
            rows: async function* () {
              yield {
                file: 'request',
                candles,
                rejections: rejections.map((r) => ({
                  file: 'request',
                  line: r.index,
                  reason: r.message,
                })),
                bytes: 0,
              };
            },
            expected: tracker.spans().map((s) => ({
              code: s.code,
              from: new Date(Math.floor(s.fromUs / 1000)),
              to: new Date(Math.ceil(s.toUs / 1000)),
            })),
          });
          ctx.body = {
            received: body.length,
            accepted: result.inserted,
            inserted: result.inserted,
            duplicates: result.duplicates,
            rejected: rejections.length,
            rejections,
          };
        } catch (error) {
          broken = error as Error;
          throw error;
        } finally {
          await connection.release(broken);
        }
      },
    }),
  );
}

/** The same rejection shape as the other bulk routes: what a single write would have answered. */
function rejectionFor(index: number, reason: string): Rejection {
  const unknown = reason.startsWith('unknown currency');
  return {
    index,
    status: unknown ? 422 : 400,
    code: unknown ? 'unknown_currency' : 'validation_error',
    message: reason,
    details: [{ path: 'body', message: reason }],
  };
}
