import { z } from 'zod';
import { dayStatsFields } from '../../../data/routes/currency/schema.ts';
import { shareCount as shares } from '../../../shared/amounts.ts';
import { currencyCode } from '../portfolio/schema.ts';

export const valueBody = z.object({ currencyCode, shares }).meta({ id: 'AssetValueRequest' });

export const valueQuery = z.object({
  currencyCode,
  shares: z
    .string()
    .regex(/^\d+(\.\d+)?([eE][+-]?\d+)?$/, 'must be a non-negative number')
    .transform(Number)
    .pipe(shares),
});

export const displayCurrencySchema = z
  .object({
    currencyName: z.string(),
    currencyCode: z.string(),
    value: z.number().meta({ description: 'Current price in USD' }),
    logoUrl: z.string(),
    lastUpdated: z.string().meta({ description: 'Instant of the current price' }),
    ...dayStatsFields,
  })
  .meta({ id: 'DisplayCurrency' });

export const currencyListSchema = z
  .object({ currencies: z.array(displayCurrencySchema) })
  .meta({ id: 'CurrencyList' });

export const timeValueSchema = z
  .object({ timestamp: z.iso.datetime(), value: z.number() })
  .meta({ id: 'TimeValue' });

export const historyParams = z.object({ code: currencyCode });
