import { z } from 'zod';
import { NotFoundError } from '../../../shared/errors.ts';
import { defineRoute, type RouteRegistry } from '../../../shared/http/routes.ts';
import { bearerSecurity } from '../../auth.ts';
import { currencyExists } from '../../currencies/catalog.ts';
import { BULK_BODY_TYPES, describeBulkLimits, readBulkItems } from '../../signals/bulkBody.ts';
import {
  bulkOutcomeSchema,
  summarise,
  throwRejection,
  unprocessable,
  validateItems,
  type Rejection,
} from '../../signals/bulkOutcome.ts';
import type { SignalRouteDeps } from '../../signals/deps.ts';
import { idempotencyHeaders, writeOnce } from '../../signals/idempotency.ts';
import {
  accuracyPerBucket,
  evaluatedPredictions,
  insertPredictions,
} from '../../signals/predictionStore.ts';
import { assertPointCap, resolveRange } from '../../signals/readQuery.ts';
import {
  predictionBulkOutcomeFields,
  predictionIdSchema,
  predictionRequestSchema,
  predictionsAnswerSchema,
  predictionsQuery,
} from './schema.ts';

const unknownCurrency = (index: number, code: string) =>
  unprocessable(index, 'unknown_currency', `Unknown currency '${code}'`, 'body.currencyCode');

const isoOrNull = (date: Date | null) => (date ? date.toISOString() : null);

export function registerPredictionRoutes(registry: RouteRegistry, deps: SignalRouteDeps) {
  registry.add(
    defineRoute({
      method: 'post',
      path: '/data/predictions/add',
      operationId: 'addPrediction',
      summary: 'Store a price prediction; answers with its id',
      tags: ['signals'],
      security: bearerSecurity('write'),
      before: [deps.requireScope('write')],
      headers: idempotencyHeaders,
      body: predictionRequestSchema,
      responses: { 202: { description: 'Stored', schema: predictionIdSchema } },
      errors: [401, 403, 413, 415, 422, 503],
      handler: async (ctx, { body, headers }) => {
        const key = headers['Idempotency-Key'];
        const request = { operation: 'addPrediction', key, payload: ctx.request.body };
        await writeOnce(ctx, deps.pool, request, async (db) => {
          const [predictionId] = await insertPredictions(db, [body]);
          if (predictionId == null) throwRejection(unknownCurrency(0, body.currencyCode));
          summarise('prediction', 1, 1, []);
          return { status: 202, body: { predictionId } };
        });
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'post',
      path: '/data/predictions/add/bulk',
      operationId: 'addPredictionsBulk',
      summary: 'Store many predictions in one request',
      description:
        'A JSON array, or NDJSON (`application/x-ndjson`, one prediction a line). Each item is ' +
        'checked like the single route; invalid items and items of unknown currencies are listed ' +
        'with their index and reasons, the others are stored in one statement. `predictionIds` ' +
        `gives each item's id in request order. ${describeBulkLimits(deps.bulk)}`,
      tags: ['signals'],
      security: bearerSecurity('write'),
      before: [deps.requireScope('write')],
      headers: idempotencyHeaders,
      body: z.array(predictionRequestSchema),
      bodyTypes: BULK_BODY_TYPES,
      rawBody: true,
      responses: {
        200: {
          description: 'Counts, ids and rejections',
          schema: bulkOutcomeSchema
            .extend(predictionBulkOutcomeFields)
            .meta({ id: 'PredictionBulkOutcome' }),
        },
      },
      errors: [401, 403, 413, 415, 422, 503],
      handler: async (ctx, { headers }) => {
        const items = await readBulkItems(ctx, deps.bulk);
        const key = headers['Idempotency-Key'];
        const request = { operation: 'addPredictionsBulk', key, payload: items };
        await writeOnce(ctx, deps.pool, request, async (db) => {
          const { valid, rejections } = validateItems(items, predictionRequestSchema);
          const ids = await insertPredictions(
            db,
            valid.map((item) => item.value),
          );
          const predictionIds: Array<number | null> = items.map(() => null);
          const unknown: Rejection[] = [];
          valid.forEach((item, position) => {
            const id = ids[position] ?? null;
            if (id === null) unknown.push(unknownCurrency(item.index, item.value.currencyCode));
            predictionIds[item.index] = id;
          });
          const accepted = valid.length - unknown.length;
          const outcome = summarise('prediction', items.length, accepted, [
            ...rejections,
            ...unknown,
          ]);
          return { status: 200, body: { ...outcome, predictionIds } };
        });
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'get',
      path: '/data/predictions',
      operationId: 'listPredictions',
      cancelWhenAbandoned: true,
      summary: 'Predictions of a currency with their error against the actual price',
      description:
        'The actual price at the predicted time is the close of the latest price observation of ' +
        'the currency at or before the prediction’s lastUpdated (null, with null errors, when ' +
        'there is none). Without intervalSeconds: the predictions whose lastUpdated is in ' +
        '[from, to), oldest first, paged. With intervalSeconds: per epoch-aligned bucket, the ' +
        'mean error, mean absolute error and mean absolute percentage error of the predictions ' +
        'that have an actual price; empty buckets are left out.',
      tags: ['signals'],
      security: bearerSecurity('read'),
      before: [deps.requireScope('read')],
      query: predictionsQuery,
      responses: {
        200: {
          description: '`predictions`, or `buckets` when intervalSeconds is given',
          schema: predictionsAnswerSchema,
        },
      },
      errors: [401, 403, 404, 503],
      handler: async (ctx, { query }) => {
        const filter = { code: query.code, modelType: query.modelType, ...resolveRange(query) };
        const perBucket = query.intervalSeconds;
        if (perBucket !== undefined) assertPointCap(filter, perBucket, deps.maxPoints);
        const rows = await deps.reads.quick(async (db) => {
          if (!(await currencyExists(db, query.code))) {
            throw new NotFoundError(`Unknown currency '${query.code}'`, 'unknown_currency');
          }
          return perBucket === undefined
            ? { predictions: await evaluatedPredictions(db, filter, query) }
            : { buckets: await accuracyPerBucket(db, filter, perBucket) };
        });
        if (rows.buckets) {
          ctx.body = {
            buckets: rows.buckets.map((row) => ({
              ...row,
              timestamp: row.timestamp.toISOString(),
            })),
          };
          return;
        }
        ctx.body = {
          predictions: rows.predictions.map((row) => ({
            ...row,
            lastUpdated: row.lastUpdated.toISOString(),
            receivedAt: row.receivedAt.toISOString(),
            marketPriceTime: isoOrNull(row.marketPriceTime),
          })),
        };
      },
    }),
  );
}
