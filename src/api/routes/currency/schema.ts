import { z } from 'zod';
import { shareCount } from '../../../shared/amounts.ts';
import { dayStatsFields } from '../../../data/routes/currency/schema.ts';
import { integerParam, intervalWithinWindow, MAX_HOURS } from '../../../shared/http/queryParams.ts';
import { isKnownTimeZone } from '../../../shared/time/timeZones.ts';
import {
  currencyCode,
  currencyKey,
  currencyName,
  NAME_OR_CODE_ISSUE,
  nameOrCode,
  numberOrNumericString,
} from '../portfolio/schema.ts';

const shares = shareCount;

export const valueBody = z
  .object({
    currencyCode: currencyCode.optional(),
    currencyName: currencyName.optional().meta({ description: 'Instead of currencyCode' }),
    shares: numberOrNumericString(shares),
  })
  .refine(nameOrCode, NAME_OR_CODE_ISSUE)
  .meta({ id: 'AssetValueRequest' });

export const valueQuery = z
  .object({
    currencyCode: currencyCode.optional(),
    currencyName: currencyName.optional(),
    shares: z
      .string()
      .regex(/^\d+(\.\d+)?([eE][+-]?\d+)?$/, 'must be a non-negative number')
      .transform(Number)
      .pipe(shares),
  })
  .refine(nameOrCode, NAME_OR_CODE_ISSUE);

export const performanceParams = z.object({ code: currencyKey });

export const performanceSchema = z
  .object({
    rating: z.enum(['up', 'down', 'neutral']),
    changePercent: z.string().meta({
      description: 'change24h rounded to two decimals with its sign and %; "0.00%" without data',
      example: '+1.23%',
    }),
  })
  .meta({ id: 'CurrencyPerformance' });

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

export const candleParams = z.object({ code: currencyCode });

const WEEK_SECONDS = 604_800;

export const candleQuery = z
  .object({
    hours: integerParam
      .pipe(z.number().int().min(1).max(MAX_HOURS))
      .default(24)
      .meta({ description: `Length of the window ending now, in hours (1..${MAX_HOURS}).` }),
    intervalSeconds: integerParam
      .pipe(z.number().int().min(1).max(WEEK_SECONDS))
      .default(300)
      .meta({ description: `Width of a candle in seconds (1..${WEEK_SECONDS}, one week).` }),
    tz: z
      .string()
      .refine(isKnownTimeZone, 'unknown time zone (use an IANA name such as Europe/Berlin)')
      .optional()
      .meta({ description: 'IANA time zone: candles of a day or more start at local midnight.' }),
  })
  .superRefine(intervalWithinWindow);

export const candleSchema = z
  .object({
    timestamp: z.iso.datetime().meta({ description: 'Start of the candle' }),
    open: z.number(),
    high: z.number(),
    low: z.number(),
    close: z.number(),
    volume: z.number(),
  })
  .meta({ id: 'PriceCandle' });
