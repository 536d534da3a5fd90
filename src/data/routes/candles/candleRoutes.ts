import { PassThrough, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { DatabasePool } from 'slonik';
import type { ReadRouter } from '../../../shared/db/readRouter.ts';
import { z } from 'zod';
import type { Logger } from '../../../shared/logger.ts';
import { NotFoundError } from '../../../shared/errors.ts';
import { defineRoute, type RouteRegistry } from '../../../shared/http/routes.ts';
import { bearerSecurity, type ScopeGuard } from '../../auth.ts';
import { currencyExists } from '../../currencies/catalog.ts';
import {
  assertZoneKnownToDatabase,
  candleRequestFrom,
  csvLines,
  EXPORT_CONTENT_TYPES,
  ndjsonLines,
} from '../../history/candleOutput.ts';
import { queryCandlesJson } from '../../history/candleQuery.ts';
import { streamCandles } from '../../history/candleStream.ts';
import type { CandleRequest } from '../../history/request.ts';
import { assertWithinPointCap, maxBuckets } from '../../../shared/time/bucketGrid.ts';
import type { RunCache } from '../../history/runCache.ts';
import { candleExportQuery, candleParams, candleQuery, candleSchema } from './schema.ts';
import { respondWithJsonPieces } from '../jsonPieces.ts';
import type { ReadGates } from '../../readGates.ts';

export interface CandleRouteDeps {
  /** Every query of these routes is an expensive read: on a replica, else the primary's read pool. */
  reads: ReadRouter;
  gates: ReadGates;
  requireScope: ScopeGuard;
  maxPoints: number;
  logger: Logger;
  /** Settled runs of history answers kept between requests; none when turned off. */
  historyCache?: RunCache;
}

const ALIGNMENT =
  'Buckets are stamped with their start (an instant, in UTC). Without `tz` they are aligned to the ' +
  'Unix epoch (or to `origin`, shifted by `offset`). With `tz`, buckets shorter than a day keep ' +
  'their width in absolute time from that zone’s local midnight (of 2000-01-03, or `origin`), so ' +
  'the repeated hour of a DST change gives distinct buckets; buckets of a day or more follow its ' +
  'wall clock: daily candles start at local midnight and last 23 or 25 hours across a change.';

export function registerCandleRoutes(registry: RouteRegistry, deps: CandleRouteDeps) {
  async function prepare(db: DatabasePool, code: string, request: CandleRequest) {
    if (!(await currencyExists(db, code))) {
      throw new NotFoundError(`Unknown currency '${code}'`, 'unknown_currency');
    }
    await assertZoneKnownToDatabase(db, request.timeZone);
  }

  registry.add(
    defineRoute({
      method: 'get',
      path: '/data/candles/{code}',
      operationId: 'currencyCandles',
      cancelWhenAbandoned: true,
      summary:
        'OHLCV candles of a currency at any interval, optionally gap-filled and calendar-aligned',
      description: `${ALIGNMENT} Answers over the point cap are refused with 400: use the export route for those.`,
      tags: ['candles'],
      security: bearerSecurity('read'),
      before: [deps.requireScope('read'), deps.gates.candles],
      params: candleParams,
      query: candleQuery,
      responses: {
        200: { description: 'Candles in ascending time order', schema: z.array(candleSchema) },
        204: { description: 'No data in the window' },
      },
      errors: [401, 403, 404, 503],
      handler: async (ctx, { params, query }) => {
        const request = candleRequestFrom(params.code, query);
        assertWithinPointCap(maxBuckets(request, request), deps.maxPoints, {
          parameter: 'interval',
          advice: `use a larger interval or the streaming export route /data/candles/${params.code}/export`,
        });
        const answer = await deps.reads.expensive((db) =>
          queryCandlesJson(db, request, { requireCurrency: true, cache: deps.historyCache }),
        );
        if (answer.empty) {
          ctx.status = 204;
          return;
        }
        respondWithJsonPieces(ctx, answer.pieces);
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'get',
      path: '/data/candles/{code}/export',
      operationId: 'exportCandles',
      cancelWhenAbandoned: true,
      summary: 'Stream candles as CSV or NDJSON, without the point cap',
      description:
        `${ALIGNMENT} The same rows as /data/candles/{code}, streamed at constant memory: computed ` +
        'slice after slice of buckets, so the first rows arrive at once whatever the window. ' +
        '`format=ndjson` gives one JSON object per line.',
      tags: ['candles'],
      security: bearerSecurity('read'),
      before: [deps.requireScope('read'), deps.gates.export],
      params: candleParams,
      query: candleExportQuery,
      responses: {
        200: {
          description: 'CSV with a header line (or NDJSON with format=ndjson), ascending',
          schema: z.string(),
          contentType: ['text/csv', 'application/x-ndjson'],
        },
      },
      errors: [401, 403, 404, 503],
      handler: async (ctx, { params, query }) => {
        const request = candleRequestFrom(params.code, query);
        // The server that passed the checks streams the rows (a replica failing by then cuts
        // the stream short, as the primary would).
        const db = await deps.reads.expensive(async (db) => {
          await prepare(db, params.code, request);
          return db;
        });
        const out = new PassThrough();
        ctx.type = EXPORT_CONTENT_TYPES[query.format];
        ctx.set(
          'Content-Disposition',
          `attachment; filename="${params.code}-${query.interval}s.${query.format === 'csv' ? 'csv' : 'ndjson'}"`,
        );
        ctx.body = out;
        const lines = query.format === 'csv' ? csvLines : ndjsonLines;
        // Headers are gone once rows flow: a failure now can only cut the stream short.
        streamCandles(db, request, (rows) => pipeline(Readable.from(lines(rows)), out)).catch(
          (error: unknown) => {
            deps.logger.warn({ err: error, code: params.code }, 'candle export ended early');
            out.destroy(error as Error);
          },
        );
      },
    }),
  );
}
