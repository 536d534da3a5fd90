import { z } from 'zod';
import { dollarsDelta, sharesDelta } from '../../../shared/amounts.ts';

export const currencyCode = z
  .string()
  .regex(/^[A-Za-z0-9]{1,15}$/, 'a currency code is 1 to 15 letters or digits')
  .transform((code) => code.toUpperCase())
  .meta({ example: 'BTC' });

export const addBody = z
  .object({
    currencyCode,
    shares: sharesDelta.meta({
      description: 'Shares to add; negative removes (never below zero).',
    }),
    walletDollars: dollarsDelta.meta({
      description: 'Dollars to add to this asset’s wallet; negative removes (never below zero).',
    }),
  })
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
    timestamp: z.iso.datetime().meta({ description: 'Start of the bucket' }),
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

export const profitParams = z.object({ currencyCode });
