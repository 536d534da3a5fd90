import { z } from 'zod';
import { currencyCodeSchema } from '../../currencies/catalog.ts';

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
