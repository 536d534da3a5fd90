import { z } from 'zod';
import { currencyCodeSchema } from '../../currencies/catalog.ts';

const nullableNumber = (description: string) => z.number().nullable().meta({ description });

/** The 24-hour statistics of a currency; null when it has no price in the last 24 hours. */
export const dayStatsFields = {
  open24h: nullableNumber('First price of the last 24 hours, in USD'),
  high24h: nullableNumber('Highest price of the last 24 hours, in USD'),
  low24h: nullableNumber('Lowest price of the last 24 hours, in USD'),
  volume24h: nullableNumber('Volume traded over the last 24 hours (sum of the candles)'),
  change24h: nullableNumber('Change of `value` against `open24h`, in percent'),
};

export const displayCurrencySchema = z
  .object({
    currencyName: z.string(),
    currencyCode: z.string(),
    value: z.number().meta({ description: 'Latest price in USD' }),
    logoUrl: z.string().meta({ example: '/assets/cryptofont/btc.svg' }),
    lastUpdated: z.iso.datetime(),
    ...dayStatsFields,
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
