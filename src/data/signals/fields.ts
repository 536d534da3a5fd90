import { z } from 'zod';
import { signedPrice } from '../../shared/amounts.ts';

// Field types shared by the signal inputs. They refuse what the database would refuse later
// (NUL characters and lone surrogates in text, integers beyond int4), so bad input is a 400 that
// names the field instead of a failed statement.

const INT4_MAX = 2_147_483_647;

export const MODEL_TYPES = ['lstm', 'complex_lstm', 'multi_layer', 'complex_multi_layer'] as const;
export const QUERY_TYPES = [
  'current_price',
  'historical_price',
  'historical_price_spaced',
] as const;
export const QUERY_LOADS = ['batches', 'bulk'] as const;

export const modelTypeSchema = z.enum(MODEL_TYPES);

/** Text PostgreSQL can store: well-formed Unicode without NUL. */
export function text(min: number, max: number) {
  return z
    .string()
    .min(min)
    .max(max)
    .refine((value) => value.isWellFormed() && !value.includes('\u0000'), {
      message: 'must be well-formed Unicode text without NUL characters',
    });
}

/** Any finite number (JSON cannot carry NaN; 1e400 parses to Infinity and is refused). */
export const finiteNumber = z.number();

/**
 * A finite number within ±limit. Values that are averaged and summed per bucket are bounded so
 * that no aggregate can overflow double precision.
 */
export function boundedNumber(limit: number) {
  return z.number().min(-limit).max(limit);
}

/** Sentiment scores are a few units at most (VADER: -1..1); the bound only catches garbage. */
export const score = boundedNumber(1e6);

/** Prices and price differences in USD (bounded in src/shared/amounts.ts). */
export const price = signedPrice;

/** A count stored as int4. */
export const count = z.number().int().min(0).max(INT4_MAX);

/** A database id (positive bigint within JavaScript's safe range). */
export const id = z.number().int().min(1);
