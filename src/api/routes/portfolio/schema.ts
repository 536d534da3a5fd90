import { z } from 'zod';
import { dollarsDelta, sharesDelta } from '../../../shared/amounts.ts';

export const currencyCode = z
  .string()
  .regex(/^[A-Za-z0-9]{1,15}$/, 'a currency code is 1 to 15 letters or digits')
  .transform((code) => code.toUpperCase())
  .meta({ example: 'BTC' });

/** A currency by its name, as the old web front end names them ("Bitcoin"); case is ignored. */
export const currencyName = z.string().trim().min(1).max(100).meta({ example: 'Bitcoin' });

/** A path segment naming a currency by code or by name. */
export const currencyKey = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .meta({ description: 'A currency code (BTC) or name (Bitcoin)', example: 'BTC' });

const NUMERIC = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** A JSON number, or a string holding one (the old front end sends form values such as "2"). */
export function numberOrNumericString(schema: z.ZodNumber) {
  return z.union([
    schema,
    z.string().trim().regex(NUMERIC, 'must be a number').transform(Number).pipe(schema),
  ]);
}

const shares = numberOrNumericString(sharesDelta);
const dollars = numberOrNumericString(dollarsDelta);

/** Either currencyCode or currencyName must be given; the code wins when both are. */
export const nameOrCode = <T extends { currencyCode?: string; currencyName?: string }>(body: T) =>
  body.currencyCode !== undefined || body.currencyName !== undefined;
export const NAME_OR_CODE_ISSUE = {
  message: 'give currencyCode or currencyName',
  path: ['currencyCode'],
};

export const addBody = z
  .object({
    currencyCode: currencyCode.optional(),
    currencyName: currencyName.optional().meta({
      description: 'The currency by name, instead of currencyCode (older clients).',
    }),
    shares: shares.meta({ description: 'Shares to add; negative removes (never below zero).' }),
    walletDollars: dollars.meta({
      description: 'Dollars to add to this asset’s wallet; negative removes (never below zero).',
    }),
  })
  .refine(nameOrCode, NAME_OR_CODE_ISSUE)
  .meta({ id: 'PortfolioAddRequest' });

export const portfolioAssetSchema = z
  .object({
    id: z.number().int(),
    currencyName: z.string(),
    currencyCode: z.string(),
    shares: z.number(),
    sharesValueInDollars: z.number(),
    assetWalletDollars: z.number(),
    totalValueInDollars: z.number(),
    lastUpdated: z.iso.datetime(),
  })
  .meta({ id: 'PortfolioAsset' });

export const portfolioSchema = z
  .object({
    id: z.number().int(),
    dollarBalance: z.number().meta({ description: 'Σ walletDollars' }),
    shareBalance: z.number().meta({ description: 'Σ shares × current price' }),
    totalWorth: z.number(),
    lastUpdated: z.iso.datetime(),
    assets: z.array(portfolioAssetSchema),
  })
  .meta({ id: 'Portfolio' });

export const portfolioHistorySchema = z
  .object({
    id: z.number().int().meta({
      description: 'Number of the bucket on the epoch-aligned grid (increases with time)',
    }),
    timestamp: z.iso.datetime().meta({ description: 'Start of the bucket' }),
    lastUpdated: z.iso
      .datetime()
      .meta({ description: 'Same as timestamp (older clients read it)' }),
    dollarBalance: z.number(),
    shareBalance: z.number(),
    totalWorth: z.number(),
    valueChange: z
      .number()
      .meta({ description: 'totalWorth minus the previous point’s (0 first)' }),
    tradeOccurred: z.boolean().meta({ description: 'Holdings changed within this bucket' }),
  })
  .meta({ id: 'PortfolioHistory' });

export const hasPortfolioSchema = z
  .object({ hasPortfolio: z.boolean() })
  .meta({ id: 'HasPortfolioResponse' });

export const valueSchema = z.object({ value: z.number() }).meta({ id: 'ValueResponse' });

export const profitParams = z.object({ currencyCode: currencyKey });

export const assetParams = z.object({ currencyName: currencyKey });

export const assetHistorySchema = z
  .object({
    currencyCode: z.string(),
    currencyName: z.string(),
    shares: z.number().meta({ description: 'Shares held at the end of the bucket' }),
    sharesValueInDollars: z.number().meta({ description: 'shares × the bucket’s price' }),
    assetWalletDollars: z.number(),
    valueChange: z.number().meta({
      description:
        'sharesValueInDollars + assetWalletDollars minus the asset’s previous point’s (0 first)',
    }),
    sharesChange: z
      .number()
      .meta({ description: 'shares minus the asset’s previous point’s (0 first)' }),
    tradeOccurred: z.boolean().meta({ description: 'The holding changed within this bucket' }),
    lastUpdated: z.iso.datetime().meta({ description: 'Start of the bucket' }),
  })
  .meta({ id: 'AssetHistory' });
