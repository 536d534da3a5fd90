import { z } from 'zod';
import { currencyCodeSchema } from '../../currencies/catalog.ts';

export const MAX_HOURS = 87_600;

export const displayCurrencySchema = z
  .object({
    currencyName: z.string(),
    currencyCode: z.string(),
    value: z.number().meta({ description: 'Latest price in USD' }),
    logoUrl: z.string().meta({ example: '/assets/cryptofont/btc.svg' }),
    lastUpdated: z.iso.datetime(),
  })
  .meta({ id: 'DisplayCurrency' });

export const displayCurrencyListSchema = z
  .object({ currencies: z.array(displayCurrencySchema) })
  .meta({ id: 'DisplayCurrencyListResponse' });

export const currencyListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(1000),
  offset: z.coerce.number().int().min(0).default(0),
});

export const timeValueSchema = z
  .object({ timestamp: z.iso.datetime(), value: z.number() })
  .meta({ id: 'TimeValue' });

export const historyParams = z.object({ code: currencyCodeSchema });

// Integers only: "1.5", "1e3" and "" are refused rather than rounded.
const integerParam = z.string().regex(/^\d+$/, 'must be a positive integer').transform(Number);

export const historyQuery = z
  .object({
    hours: integerParam
      .pipe(z.number().int().min(1).max(MAX_HOURS))
      .default(24)
      .meta({ description: `Length of the window ending now, in hours (1..${MAX_HOURS}).` }),
    intervalSeconds: integerParam
      .pipe(z.number().int().min(1))
      .default(60)
      .meta({ description: 'Spacing of the points in seconds (1..hours×3600).' }),
  })
  .superRefine((q, ctx) => {
    if (q.intervalSeconds > q.hours * 3600) {
      ctx.addIssue({
        code: 'custom',
        path: ['intervalSeconds'],
        message: `must not exceed hours×3600 (${q.hours * 3600})`,
      });
    }
  });
