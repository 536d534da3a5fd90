import { z } from 'zod';
import { currencyCode, MAX_AMOUNT } from '../portfolio/schema.ts';

const shares = z.number().min(0).max(MAX_AMOUNT);

export const valueBody = z.object({ currencyCode, shares }).meta({ id: 'AssetValueRequest' });

export const valueQuery = z.object({
  currencyCode,
  shares: z
    .string()
    .regex(/^\d+(\.\d+)?([eE][+-]?\d+)?$/, 'must be a non-negative number')
    .transform(Number)
    .pipe(shares),
});
