import { z } from 'zod';
import type { ErrorDetail } from '../../../shared/errors.ts';
import { defineRoute, type RouteRegistry } from '../../../shared/http/routes.ts';
import { bearerSecurity } from '../../auth.ts';
import { BULK_BODY_TYPES, describeBulkLimits, readBulkItems } from '../../signals/bulkBody.ts';
import {
  bulkOutcomeSchema,
  successfulSchema,
  summarise,
  throwRejection,
  validateItems,
  type Rejection,
} from '../../signals/bulkOutcome.ts';
import type { SignalRouteDeps } from '../../signals/deps.ts';
import { idempotencyHeaders, writeOnce } from '../../signals/idempotency.ts';
import {
  insertTrainingSessions,
  listTrainingSessions,
  type TrainingSessionCheck,
  type TrainingSessionRow,
} from '../../signals/trainingSessionStore.ts';
import {
  trainingSessionListSchema,
  trainingSessionRequestSchema,
  trainingSessionsQuery,
  type TrainingSessionInput,
} from './schema.ts';

/** The 422 an item gets when its currency or its prediction does not exist; null when stored. */
function missingReferences(
  index: number,
  item: TrainingSessionInput,
  check: TrainingSessionCheck,
): Rejection | null {
  const details: ErrorDetail[] = [];
  if (!check.currencyKnown) {
    details.push({ path: 'body.currency', message: `Unknown currency '${item.currency}'` });
  }
  if (!check.predictionKnown) {
    details.push({ path: 'body.prediction', message: `Unknown prediction ${item.prediction}` });
  }
  const [first] = details;
  if (!first) return null;
  const code = check.currencyKnown ? 'unknown_prediction' : 'unknown_currency';
  return { index, status: 422, code, message: first.message, details };
}

function present(row: TrainingSessionRow) {
  return {
    trainingSessionId: row.trainingSessionId,
    currency: row.currency,
    prediction: row.prediction,
    numRows: row.numRows,
    epochsTrained: row.epochsTrained,
    maxEpochs: row.maxEpochs,
    startingLoss: row.startingLoss,
    finalLoss: row.finalLoss,
    modelType: row.modelType,
    queryType: row.queryType,
    trainingStartTime: row.trainingStartTime.toISOString(),
    trainingEndTime: row.trainingEndTime.toISOString(),
    queryStartTime: row.queryStartTime.toISOString(),
    queryEndTime: row.queryEndTime.toISOString(),
    sequenceLength: row.sequenceLength,
    batchSize: row.batchSize,
    dimensionWidth: row.dimensionWidth,
    queryLoad: row.queryLoad,
    queryBatchSize: row.queryBatchSize,
    trainingDevice: row.trainingDevice,
    shortSequenceLength: row.shortSequenceLength,
    mediumSequenceLength: row.mediumSequenceLength,
    longSequenceLength: row.longSequenceLength,
    receivedAt: row.receivedAt.toISOString(),
    linkedPrediction: {
      predictionId: row.prediction,
      currencyCode: row.predictionCurrencyCode,
      predictedPrice: row.predictedPrice,
      actualPrice: row.actualPrice,
      priceDifference: row.priceDifference,
      percentDifference: row.percentDifference,
      modelType: row.predictionModelType,
      numRows: row.predictionNumRows,
      lastUpdated: row.predictionLastUpdated.toISOString(),
      receivedAt: row.predictionReceivedAt.toISOString(),
    },
  };
}

export function registerTrainingSessionRoutes(registry: RouteRegistry, deps: SignalRouteDeps) {
  registry.add(
    defineRoute({
      method: 'post',
      path: '/data/training-session/add',
      operationId: 'addTrainingSession',
      summary: 'Store the summary of a training session',
      tags: ['signals'],
      security: bearerSecurity('write'),
      before: [deps.requireScope('write')],
      headers: idempotencyHeaders,
      body: trainingSessionRequestSchema,
      responses: { 200: { description: 'Stored', schema: successfulSchema } },
      errors: [401, 403, 413, 415, 422, 503],
      handler: async (ctx, { body, headers }) => {
        const key = headers['Idempotency-Key'];
        const request = { operation: 'addTrainingSession', key, payload: ctx.request.body };
        await writeOnce(ctx, deps.pool, request, async (db) => {
          const [check] = await insertTrainingSessions(db, [body]);
          const rejection = check && missingReferences(0, body, check);
          if (rejection) throwRejection(rejection);
          summarise('training_session', 1, 1, []);
          return { status: 200, body: { successful: true } };
        });
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'post',
      path: '/data/training-session/add/bulk',
      operationId: 'addTrainingSessionsBulk',
      summary: 'Store many training-session summaries in one request',
      description:
        'A JSON array, or NDJSON (`application/x-ndjson`, one session a line). Each item is ' +
        'checked like the single route; invalid items and items whose currency or prediction ' +
        'does not exist are listed with their index and reasons, the others are stored in one ' +
        `statement. ${describeBulkLimits(deps.bulk)}`,
      tags: ['signals'],
      security: bearerSecurity('write'),
      before: [deps.requireScope('write')],
      headers: idempotencyHeaders,
      body: z.array(trainingSessionRequestSchema),
      bodyTypes: BULK_BODY_TYPES,
      rawBody: true,
      responses: { 200: { description: 'Counts and rejections', schema: bulkOutcomeSchema } },
      errors: [401, 403, 413, 415, 422, 503],
      handler: async (ctx, { headers }) => {
        const items = await readBulkItems(ctx, deps.bulk);
        const key = headers['Idempotency-Key'];
        const request = { operation: 'addTrainingSessionsBulk', key, payload: items };
        await writeOnce(ctx, deps.pool, request, async (db) => {
          const { valid, rejections } = validateItems(items, trainingSessionRequestSchema);
          const checks = await insertTrainingSessions(
            db,
            valid.map((item) => item.value),
          );
          const missing = valid.flatMap((item, position) => {
            const check = checks[position];
            const rejection = check && missingReferences(item.index, item.value, check);
            return rejection ? [rejection] : [];
          });
          const accepted = valid.length - missing.length;
          const outcome = summarise('training_session', items.length, accepted, [
            ...rejections,
            ...missing,
          ]);
          return { status: 200, body: outcome };
        });
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'get',
      path: '/data/training-sessions',
      operationId: 'listTrainingSessions',
      cancelWhenAbandoned: true,
      summary: 'Training sessions with their linked prediction',
      description:
        'Filtered by currency, model type and a range of trainingStartTime [from, to) (each ' +
        'optional), newest first, paged.',
      tags: ['signals'],
      security: bearerSecurity('read'),
      before: [deps.requireScope('read')],
      query: trainingSessionsQuery,
      responses: {
        200: { description: 'Sessions, newest first', schema: trainingSessionListSchema },
      },
      errors: [401, 403, 503],
      handler: async (ctx, { query }) => {
        const rows = await deps.reads.quick((db) => listTrainingSessions(db, query, query));
        ctx.body = { trainingSessions: rows.map(present) };
      },
    }),
  );
}
