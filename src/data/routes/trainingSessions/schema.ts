import { z } from 'zod';
import { currencyCodeSchema } from '../../currencies/catalog.ts';
import {
  count,
  finiteNumber,
  id,
  modelTypeSchema,
  QUERY_LOADS,
  QUERY_TYPES,
} from '../../signals/fields.ts';
import {
  fromParam,
  limitParam,
  offsetParam,
  rangeIsOrdered,
  toParam,
} from '../../signals/readQuery.ts';
import { timestampSchema } from '../../signals/timestamp.ts';
import { storedPredictionSchema } from '../predictions/schema.ts';

const queryLoad = z.enum(QUERY_LOADS);

const nullableCount = count.nullable().default(null);

export const trainingSessionRequestSchema = z
  .object({
    currency: currencyCodeSchema.meta({ description: 'A known currency code, else 422.' }),
    prediction: id.meta({ description: 'An existing predictionId, else 422.' }),
    numRows: count,
    epochsTrained: count,
    maxEpochs: count,
    startingLoss: finiteNumber,
    finalLoss: finiteNumber,
    modelType: modelTypeSchema,
    queryType: z.enum(QUERY_TYPES),
    trainingStartTime: timestampSchema,
    trainingEndTime: timestampSchema,
    queryStartTime: timestampSchema,
    queryEndTime: timestampSchema,
    sequenceLength: count,
    batchSize: count,
    dimensionWidth: count,
    // A deployed client sends the load as a one-element array, e.g. ["batches"].
    queryLoad: z
      .union([queryLoad, z.array(queryLoad).length(1)], {
        error: 'must be "batches" or "bulk" (or a one-element array holding one of them)',
      })
      .transform(
        (value) => (Array.isArray(value) ? value[0] : value) as (typeof QUERY_LOADS)[number],
      ),
    queryBatchSize: nullableCount,
    trainingDevice: z
      .string()
      .regex(/^(cpu|gpu_\d{1,3})$/, 'must be cpu or gpu_<n> (gpu_0, gpu_1, …)'),
    shortSequenceLength: nullableCount,
    mediumSequenceLength: nullableCount,
    longSequenceLength: nullableCount,
  })
  .meta({ id: 'TrainingSessionRequest', description: 'Unknown fields are ignored.' });
export type TrainingSessionInput = z.output<typeof trainingSessionRequestSchema>;

export const trainingSessionsQuery = z
  .object({
    currency: currencyCodeSchema.optional(),
    modelType: modelTypeSchema.optional(),
    from: fromParam.meta({ description: 'Earliest trainingStartTime, inclusive.' }),
    to: toParam.meta({ description: 'Latest trainingStartTime, exclusive.' }),
    limit: limitParam(100, 1000),
    offset: offsetParam,
  })
  .superRefine(rangeIsOrdered);

export const trainingSessionSchema = z
  .object({
    trainingSessionId: z.number().int(),
    currency: z.string(),
    prediction: z.number().int(),
    numRows: z.number().int(),
    epochsTrained: z.number().int(),
    maxEpochs: z.number().int(),
    startingLoss: z.number(),
    finalLoss: z.number(),
    modelType: modelTypeSchema,
    queryType: z.enum(QUERY_TYPES),
    trainingStartTime: z.iso.datetime(),
    trainingEndTime: z.iso.datetime(),
    queryStartTime: z.iso.datetime(),
    queryEndTime: z.iso.datetime(),
    sequenceLength: z.number().int(),
    batchSize: z.number().int(),
    dimensionWidth: z.number().int(),
    queryLoad: queryLoad,
    queryBatchSize: z.number().int().nullable(),
    trainingDevice: z.string(),
    shortSequenceLength: z.number().int().nullable(),
    mediumSequenceLength: z.number().int().nullable(),
    longSequenceLength: z.number().int().nullable(),
    receivedAt: z.iso.datetime(),
    linkedPrediction: storedPredictionSchema,
  })
  .meta({ id: 'TrainingSession' });

export const trainingSessionListSchema = z
  .object({ trainingSessions: z.array(trainingSessionSchema) })
  .meta({ id: 'TrainingSessionList' });
