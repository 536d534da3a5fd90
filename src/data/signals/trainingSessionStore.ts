import { sql, type CommonQueryMethods, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { TrainingSessionInput } from '../routes/trainingSessions/schema.ts';
import { MODEL_TYPES, QUERY_LOADS, QUERY_TYPES } from './fields.ts';

export interface TrainingSessionCheck {
  currencyKnown: boolean;
  predictionKnown: boolean;
}

/**
 * Stores training sessions in one statement. Each item is stored only when its currency and its
 * prediction exist; the answer says, for each item in order, which of the two were found (both
 * true: stored). The prediction's time is copied beside its id so joins prune chunks.
 */
export async function insertTrainingSessions(
  pool: CommonQueryMethods,
  items: readonly TrainingSessionInput[],
): Promise<TrainingSessionCheck[]> {
  if (items.length === 0) return [];
  const rows = items.map((item, index) => ({
    ord: index,
    currency_code: item.currency,
    prediction_id: item.prediction,
    num_rows: item.numRows,
    epochs_trained: item.epochsTrained,
    max_epochs: item.maxEpochs,
    starting_loss: item.startingLoss,
    final_loss: item.finalLoss,
    model_type: item.modelType,
    query_type: item.queryType,
    training_start_time: item.trainingStartTime.toISOString(),
    training_end_time: item.trainingEndTime.toISOString(),
    query_start_time: item.queryStartTime.toISOString(),
    query_end_time: item.queryEndTime.toISOString(),
    sequence_length: item.sequenceLength,
    batch_size: item.batchSize,
    dimension_width: item.dimensionWidth,
    query_load: item.queryLoad,
    query_batch_size: item.queryBatchSize,
    training_device: item.trainingDevice,
    short_sequence_length: item.shortSequenceLength,
    medium_sequence_length: item.mediumSequenceLength,
    long_sequence_length: item.longSequenceLength,
  }));
  const checks = await pool.any(sql.type(
    z.object({ ord: z.number(), currencyKnown: z.boolean(), predictionKnown: z.boolean() }),
  )`
    WITH checked AS MATERIALIZED (
      SELECT x.*,
             EXISTS (SELECT 1 FROM currencies c WHERE c.code = x.currency_code) AS currency_known,
             (SELECT p.last_updated FROM predictions p WHERE p.id = x.prediction_id LIMIT 1) AS prediction_time
      FROM jsonb_to_recordset(${sql.jsonb(rows)}) AS x(
        ord int, currency_code text, prediction_id bigint, num_rows int, epochs_trained int,
        max_epochs int, starting_loss float8, final_loss float8, model_type text, query_type text,
        training_start_time timestamptz, training_end_time timestamptz,
        query_start_time timestamptz, query_end_time timestamptz, sequence_length int,
        batch_size int, dimension_width int, query_load text, query_batch_size int,
        training_device text, short_sequence_length int, medium_sequence_length int,
        long_sequence_length int)
    ), stored AS (
      INSERT INTO training_sessions (
        currency_code, prediction_id, prediction_time, num_rows, epochs_trained, max_epochs,
        starting_loss, final_loss, model_type, query_type, training_start_time, training_end_time,
        query_start_time, query_end_time, sequence_length, batch_size, dimension_width, query_load,
        query_batch_size, training_device, short_sequence_length, medium_sequence_length,
        long_sequence_length)
      SELECT currency_code, prediction_id, prediction_time, num_rows, epochs_trained, max_epochs,
             starting_loss, final_loss, model_type, query_type, training_start_time,
             training_end_time, query_start_time, query_end_time, sequence_length, batch_size,
             dimension_width, query_load, query_batch_size, training_device,
             short_sequence_length, medium_sequence_length, long_sequence_length
      FROM checked
      WHERE currency_known AND prediction_time IS NOT NULL
      ORDER BY ord
    )
    SELECT ord, currency_known AS "currencyKnown", prediction_time IS NOT NULL AS "predictionKnown"
    FROM checked
    ORDER BY ord
  `);
  return checks.map(({ currencyKnown, predictionKnown }) => ({ currencyKnown, predictionKnown }));
}

const sessionRow = z.object({
  trainingSessionId: z.number(),
  currency: z.string(),
  prediction: z.number(),
  numRows: z.number(),
  epochsTrained: z.number(),
  maxEpochs: z.number(),
  startingLoss: z.number(),
  finalLoss: z.number(),
  modelType: z.enum(MODEL_TYPES),
  queryType: z.enum(QUERY_TYPES),
  trainingStartTime: z.date(),
  trainingEndTime: z.date(),
  queryStartTime: z.date(),
  queryEndTime: z.date(),
  sequenceLength: z.number(),
  batchSize: z.number(),
  dimensionWidth: z.number(),
  queryLoad: z.enum(QUERY_LOADS),
  queryBatchSize: z.number().nullable(),
  trainingDevice: z.string(),
  shortSequenceLength: z.number().nullable(),
  mediumSequenceLength: z.number().nullable(),
  longSequenceLength: z.number().nullable(),
  receivedAt: z.date(),
  predictionCurrencyCode: z.string(),
  predictedPrice: z.number(),
  actualPrice: z.number(),
  priceDifference: z.number(),
  percentDifference: z.number(),
  predictionModelType: z.enum(MODEL_TYPES),
  predictionNumRows: z.number(),
  predictionLastUpdated: z.date(),
  predictionReceivedAt: z.date(),
});
export type TrainingSessionRow = z.infer<typeof sessionRow>;

export interface TrainingSessionFilter {
  currency?: string | undefined;
  modelType?: string | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
}

function conditions(filter: TrainingSessionFilter) {
  const parts = [sql.fragment`true`];
  if (filter.currency) parts.push(sql.fragment`t.currency_code = ${filter.currency}`);
  if (filter.modelType) parts.push(sql.fragment`t.model_type = ${filter.modelType}`);
  if (filter.from) parts.push(sql.fragment`t.training_start_time >= ${sql.timestamp(filter.from)}`);
  if (filter.to) parts.push(sql.fragment`t.training_start_time < ${sql.timestamp(filter.to)}`);
  return sql.join(parts, sql.fragment` AND `);
}

/** Training sessions matching the filter (on trainingStartTime), newest first, with their prediction. */
export async function listTrainingSessions(
  pool: DatabasePool,
  filter: TrainingSessionFilter,
  page: { limit: number; offset: number },
): Promise<readonly TrainingSessionRow[]> {
  return pool.any(sql.type(sessionRow)`
    SELECT t.id AS "trainingSessionId", t.currency_code AS currency, t.prediction_id AS prediction,
           t.num_rows AS "numRows", t.epochs_trained AS "epochsTrained",
           t.max_epochs AS "maxEpochs", t.starting_loss AS "startingLoss",
           t.final_loss AS "finalLoss", t.model_type AS "modelType", t.query_type AS "queryType",
           t.training_start_time AS "trainingStartTime", t.training_end_time AS "trainingEndTime",
           t.query_start_time AS "queryStartTime", t.query_end_time AS "queryEndTime",
           t.sequence_length AS "sequenceLength", t.batch_size AS "batchSize",
           t.dimension_width AS "dimensionWidth", t.query_load AS "queryLoad",
           t.query_batch_size AS "queryBatchSize", t.training_device AS "trainingDevice",
           t.short_sequence_length AS "shortSequenceLength",
           t.medium_sequence_length AS "mediumSequenceLength",
           t.long_sequence_length AS "longSequenceLength", t.received_at AS "receivedAt",
           p.currency_code AS "predictionCurrencyCode", p.predicted_price AS "predictedPrice",
           p.actual_price AS "actualPrice", p.price_difference AS "priceDifference",
           p.percent_difference AS "percentDifference", p.model_type AS "predictionModelType",
           p.num_rows AS "predictionNumRows", p.last_updated AS "predictionLastUpdated",
           p.received_at AS "predictionReceivedAt"
    FROM training_sessions t
    JOIN predictions p ON p.id = t.prediction_id AND p.last_updated = t.prediction_time
    WHERE ${conditions(filter)}
    ORDER BY t.training_start_time DESC, t.id DESC
    LIMIT ${page.limit} OFFSET ${page.offset}
  `);
}
