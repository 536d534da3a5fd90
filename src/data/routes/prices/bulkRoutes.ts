import type { Context } from 'koa';
import type pg from 'pg';
import { PayloadTooLargeError, ValidationError } from '../../../shared/errors.ts';
import { defineRoute, type RouteRegistry } from '../../../shared/http/routes.ts';
import { bearerSecurity, type ScopeGuard } from '../../auth.ts';
import { candleProblem, latestAcceptedMicros } from '../../ingest/candleValidation.ts';
import { CodeResolver } from '../../ingest/codes.ts';
import { knownCurrencyCodes, pooledConnection } from '../../ingest/connection.ts';
import { loadUnit } from '../../ingest/loader.ts';
import { RangeTracker } from '../../ingest/rangeTracker.ts';
import { candleFromObject } from '../../ingest/readers/lineParsers.ts';
import { TimeParser } from '../../ingest/timeParsing.ts';
import type { Candle } from '../../ingest/types.ts';
import {
  BULK_MAX_ITEMS,
  BULK_MAX_NDJSON_BYTES,
  bulkBodySchema,
  bulkResultSchema,
} from './schema.ts';

export interface PriceBulkRouteDeps {
  pgPool: pg.Pool;
  requireScope: ScopeGuard;
}

const NDJSON = 'application/x-ndjson';
/** Marks an NDJSON line that is not JSON, so it is reported by index like any bad item. */
const NOT_JSON = Symbol('not JSON');

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
        '`rejected` with its index and reason, the others are stored. A currency and time already ' +
        'stored keeps its row (counted in `duplicates`), so sending the same items twice adds ' +
        'nothing. Written ranges are marked for the rollups.',
      tags: ['prices'],
      security: bearerSecurity('write'),
      before: [deps.requireScope('write')],
      body: bulkBodySchema,
      bodyTypes: ['application/json', NDJSON],
      readBody: async (ctx) => (ctx.is(NDJSON) ? readNdjson(ctx) : ctx.request.body),
      responses: {
        200: { description: 'Counts and the rejected items', schema: bulkResultSchema },
      },
      errors: [401, 403, 413, 415, 503],
      handler: async (ctx, { body }) => {
        if (body.length > BULK_MAX_ITEMS) {
          throw new PayloadTooLargeError(
            `At most ${BULK_MAX_ITEMS} items per request; got ${body.length}`,
          );
        }
        const connection = await connect();
        let broken: Error | undefined;
        try {
          const codes = new CodeResolver(await knownCurrencyCodes(connection.client));
          const time = new TimeParser();
          const latest = latestAcceptedMicros();
          const candles: Candle[] = [];
          const rejected: Array<{ index: number; reason: string }> = [];
          const tracker = new RangeTracker();
          body.forEach((item, index) => {
            const candle =
              item === NOT_JSON ? 'not valid JSON' : candleFromObject(item, index, codes, time);
            const problem = typeof candle === 'string' ? candle : candleProblem(candle, latest);
            if (problem !== null || typeof candle === 'string') {
              rejected.push({ index, reason: problem ?? 'invalid item' });
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
            rows: async function* () {
              yield { file: 'request', candles, rejections: [], bytes: 0 };
            },
            expected: tracker.spans().map((s) => ({
              code: s.code,
              from: new Date(Math.floor(s.fromUs / 1000)),
              to: new Date(Math.ceil(s.toUs / 1000)),
            })),
          });
          ctx.body = {
            accepted: candles.length,
            inserted: result.inserted,
            duplicates: result.duplicates,
            rejected,
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

/** Reads an NDJSON body with a size cap; each line becomes an item (or a not-JSON marker). */
async function readNdjson(ctx: Context): Promise<unknown[]> {
  const declared = Number(ctx.get('content-length'));
  if (declared > BULK_MAX_NDJSON_BYTES) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > BULK_MAX_NDJSON_BYTES) throw tooLarge();
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  const items: unknown[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      items.push(JSON.parse(line));
    } catch {
      items.push(NOT_JSON);
    }
    if (items.length > BULK_MAX_ITEMS) {
      throw new PayloadTooLargeError(`At most ${BULK_MAX_ITEMS} items per request`);
    }
  }
  if (items.length === 0 && text.trim() !== '') throw new ValidationError('The body holds no item');
  return items;
}

function tooLarge() {
  return new PayloadTooLargeError(
    `NDJSON bodies are limited to ${BULK_MAX_NDJSON_BYTES / 1024 / 1024} MB; send several requests`,
  );
}
