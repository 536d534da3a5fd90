import { z } from 'zod';
import { rejectionSchema } from '../../signals/bulkOutcome.ts';

const number = z.union([z.number(), z.string()]);
const time = z
  .union([z.iso.datetime({ offset: true, local: true }), z.number()])
  .meta({ description: 'ISO 8601 (UTC unless a zone is given) or epoch s/ms/µs' });

export const bulkCandleSchema = z
  .object({
    code: z.string().meta({ example: 'BTC' }),
    time,
    open: number,
    high: number,
    low: number,
    close: number,
    volume: number.optional(),
  })
  .meta({ id: 'BulkCandle', title: 'Candle' });

export const bulkTickSchema = z
  .object({ code: z.string().meta({ example: 'BTC' }), time, price: number })
  .meta({ id: 'BulkTick', title: 'Tick' });

/**
 * The body is validated item by item in the handler (a bad item is reported, not fatal) and the
 * route reads its own stream, so this schema only documents what each item should be.
 */
export const bulkBodySchema = z.array(z.union([bulkCandleSchema, bulkTickSchema])).meta({
  description:
    'Candles {code, time, open, high, low, close, volume?} or ticks {code, time, price}, as a JSON ' +
    'array or NDJSON (one object per line).',
});

export const bulkResultSchema = z
  .object({
    received: z.number().int().meta({ description: 'Items in the request' }),
    accepted: z.number().int().meta({ description: 'Rows stored by this request' }),
    inserted: z.number().int().meta({ description: 'Same as accepted' }),
    duplicates: z
      .number()
      .int()
      .meta({ description: 'Already stored, or repeated in the request: existing rows win' }),
    rejected: z.number().int(),
    rejections: z.array(rejectionSchema),
  })
  .meta({ id: 'BulkPriceOutcome' });
