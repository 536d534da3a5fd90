import { sql, type CommonQueryMethods, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { bucketSql } from '../history/gridSql.ts';
import type { PredictionInput } from '../routes/predictions/schema.ts';
import { MODEL_TYPES } from './fields.ts';

/**
 * Stores predictions in one statement and returns, for each item in order, its new id, or null
 * when its currency is unknown (nothing is stored for it). Ids are drawn from the identity
 * sequence inside the statement so each one can be matched to the item it belongs to.
 */
export async function insertPredictions(
  pool: CommonQueryMethods,
  items: readonly PredictionInput[],
): Promise<Array<number | null>> {
  if (items.length === 0) return [];
  const rows = items.map((item, index) => ({
    ord: index,
    currency_code: item.currencyCode,
    predicted_price: item.predictedPrice,
    actual_price: item.actualPrice,
    price_difference: item.priceDifference,
    percent_difference: item.percentDifference,
    model_type: item.modelType,
    num_rows: item.numRows,
    last_updated: item.lastUpdated.toISOString(),
  }));
  const stored = await pool.any(sql.type(z.object({ ord: z.number(), id: z.number() }))`
    WITH known AS MATERIALIZED (
      SELECT nextval(pg_get_serial_sequence('predictions', 'id')) AS id, x.*
      FROM jsonb_to_recordset(${sql.jsonb(rows)}) AS x(
        ord int, currency_code text, predicted_price float8, actual_price float8,
        price_difference float8, percent_difference float8, model_type text, num_rows int,
        last_updated timestamptz)
      WHERE EXISTS (SELECT 1 FROM currencies c WHERE c.code = x.currency_code)
    ), stored AS (
      INSERT INTO predictions (
        id, currency_code, predicted_price, actual_price, price_difference, percent_difference,
        model_type, num_rows, last_updated)
      OVERRIDING SYSTEM VALUE
      SELECT id, currency_code, predicted_price, actual_price, price_difference,
             percent_difference, model_type, num_rows, last_updated
      FROM known
    )
    SELECT ord, id FROM known
  `);
  const ids: Array<number | null> = items.map(() => null);
  for (const row of stored) ids[row.ord] = row.id;
  return ids;
}

const storedPredictionRow = z.object({
  predictionId: z.number(),
  currencyCode: z.string(),
  predictedPrice: z.number(),
  actualPrice: z.number(),
  priceDifference: z.number(),
  percentDifference: z.number(),
  modelType: z.enum(MODEL_TYPES),
  numRows: z.number(),
  lastUpdated: z.date(),
  receivedAt: z.date(),
});

const evaluatedPredictionRow = storedPredictionRow.extend({
  marketPrice: z.number().nullable(),
  marketPriceTime: z.date().nullable(),
  error: z.number().nullable(),
  absolutePercentageError: z.number().nullable(),
});

export interface PredictionFilter {
  code: string;
  from: Date;
  to: Date;
  modelType?: string | undefined;
}

// The actual price at the predicted time is the close of the latest observation at or before
// it. The lateral lookup walks the price hypertable backwards from lastUpdated and stops at the
// first row, so it touches one chunk unless the currency has a gap across a chunk boundary.
const evaluated = (filter: PredictionFilter) => sql.fragment`
  SELECT p.*, m.close AS market_price, m.time AS market_time,
         p.predicted_price - m.close AS error
  FROM predictions p
  LEFT JOIN LATERAL (
    SELECT o.close, o.time FROM price_observations o
    WHERE o.currency_code = p.currency_code AND o.time <= p.last_updated
    ORDER BY o.time DESC
    LIMIT 1
  ) m ON true
  WHERE p.currency_code = ${filter.code}
    AND p.last_updated >= ${sql.timestamp(filter.from)}
    AND p.last_updated < ${sql.timestamp(filter.to)}
    ${filter.modelType ? sql.fragment`AND p.model_type = ${filter.modelType}` : sql.fragment``}
`;

/** Predictions of one currency in [from, to), oldest first, each with its market price. */
export async function evaluatedPredictions(
  pool: DatabasePool,
  filter: PredictionFilter,
  page: { limit: number; offset: number },
) {
  return pool.any(sql.type(evaluatedPredictionRow)`
    SELECT id AS "predictionId", currency_code AS "currencyCode",
           predicted_price AS "predictedPrice", actual_price AS "actualPrice",
           price_difference AS "priceDifference", percent_difference AS "percentDifference",
           model_type AS "modelType", num_rows AS "numRows", last_updated AS "lastUpdated",
           received_at AS "receivedAt", market_price AS "marketPrice",
           market_time AS "marketPriceTime", error,
           abs(error) / market_price * 100 AS "absolutePercentageError"
    FROM (${evaluated(filter)}) e
    ORDER BY last_updated, id
    LIMIT ${page.limit} OFFSET ${page.offset}
  `);
}

const accuracyRow = z.object({
  timestamp: z.date(),
  count: z.number(),
  evaluated: z.number(),
  meanError: z.number().nullable(),
  meanAbsoluteError: z.number().nullable(),
  meanAbsolutePercentageError: z.number().nullable(),
});

/** Error averages per epoch-aligned bucket of lastUpdated; predictions without a price are counted but not averaged. */
export async function accuracyPerBucket(
  pool: DatabasePool,
  filter: PredictionFilter,
  intervalSeconds: number,
) {
  return pool.any(sql.type(accuracyRow)`
    SELECT ${bucketSql({ intervalSeconds }, sql.fragment`last_updated`)} AS timestamp,
           count(*) AS count,
           count(market_price) AS evaluated,
           avg(error) AS "meanError",
           avg(abs(error)) AS "meanAbsoluteError",
           avg(abs(error) / market_price * 100) AS "meanAbsolutePercentageError"
    FROM (${evaluated(filter)}) e
    GROUP BY 1
    ORDER BY 1
  `);
}
