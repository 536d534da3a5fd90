import { z } from 'zod';
import { currencyCodeSchema } from '../../currencies/catalog.ts';
import { count, modelTypeSchema, price } from '../../signals/fields.ts';
import {
  fromParam,
  intervalParam,
  limitParam,
  offsetParam,
  rangeIsOrdered,
  toParam,
} from '../../signals/readQuery.ts';
import { timestampSchema } from '../../signals/timestamp.ts';

export const predictionRequestSchema = z
  .object({
    currencyCode: currencyCodeSchema.meta({ description: 'A known currency code, else 422.' }),
    predictedPrice: price,
    actualPrice: price.meta({ description: 'The price the analysis service saw when predicting.' }),
    priceDifference: price,
    percentDifference: price,
    modelType: modelTypeSchema,
    numRows: count,
    lastUpdated: timestampSchema.meta({ description: 'The instant the prediction is for.' }),
  })
  .meta({ id: 'PricePredictionRequest', description: 'Unknown fields are ignored.' });
export type PredictionInput = z.output<typeof predictionRequestSchema>;

export const predictionIdSchema = z
  .object({ predictionId: z.number().int() })
  .meta({ id: 'PredictionIdResponse' });

export const predictionBulkOutcomeFields = {
  predictionIds: z.array(z.number().int().nullable()).meta({
    description: 'The id of each item in request order; null where the item was rejected.',
  }),
};

export const predictionsQuery = z
  .object({
    code: currencyCodeSchema.meta({ description: 'Currency code' }),
    from: fromParam,
    to: toParam,
    modelType: modelTypeSchema.optional(),
    intervalSeconds: intervalParam(
      'When given, answer with averages per epoch-aligned bucket of this many seconds instead of ' +
        'the predictions themselves.',
    ).optional(),
    limit: limitParam(1000, 10_000),
    offset: offsetParam,
  })
  .superRefine(rangeIsOrdered);

export const storedPredictionSchema = z
  .object({
    predictionId: z.number().int(),
    currencyCode: z.string(),
    predictedPrice: z.number(),
    actualPrice: z.number(),
    priceDifference: z.number(),
    percentDifference: z.number(),
    modelType: modelTypeSchema,
    numRows: z.number().int(),
    lastUpdated: z.iso.datetime(),
    receivedAt: z.iso.datetime(),
  })
  .meta({ id: 'StoredPrediction' });

export const evaluatedPredictionSchema = storedPredictionSchema
  .extend({
    marketPrice: z
      .number()
      .nullable()
      .meta({
        description:
          'The actual price at the predicted time: the close of the latest price observation at ' +
          'or before lastUpdated; null when there is none.',
      }),
    marketPriceTime: z.iso.datetime().nullable(),
    error: z.number().nullable().meta({ description: 'predictedPrice − marketPrice' }),
    absolutePercentageError: z
      .number()
      .nullable()
      .meta({ description: '|predictedPrice − marketPrice| / marketPrice × 100' }),
  })
  .meta({ id: 'EvaluatedPrediction' });

export const predictionBucketSchema = z
  .object({
    timestamp: z.iso.datetime().meta({ description: 'Start of the bucket' }),
    count: z.number().int().meta({ description: 'Predictions whose lastUpdated is in the bucket' }),
    evaluated: z.number().int().meta({ description: 'Of those, the ones with a market price' }),
    meanError: z.number().nullable(),
    meanAbsoluteError: z.number().nullable(),
    meanAbsolutePercentageError: z.number().nullable(),
  })
  .meta({ id: 'PredictionAccuracyBucket' });

export const predictionsAnswerSchema = z.union([
  z.object({ predictions: z.array(evaluatedPredictionSchema) }),
  z.object({ buckets: z.array(predictionBucketSchema) }),
]);
