import type { DisplayCurrency } from '../dataAnswers.ts';
import type { HoldingRow, PortfolioRow } from './holdings.ts';

// The Portfolio and profit figures of the contract, from holdings and current prices.

export interface PortfolioAsset {
  id: number;
  currencyName: string;
  currencyCode: string;
  shares: number;
  sharesValueInDollars: number;
  assetWalletDollars: number;
  totalValueInDollars: number;
  lastUpdated: string;
}

export interface Portfolio {
  id: number;
  dollarBalance: number;
  shareBalance: number;
  totalWorth: number;
  lastUpdated: string;
  assets: PortfolioAsset[];
}

export type PriceBook = ReadonlyMap<string, DisplayCurrency>;

/** Whether valuing these holdings needs current prices at all. */
export function needsPrices(holdings: readonly HoldingRow[]): boolean {
  return holdings.some((h) => h.shares > 0);
}

/** Current price of a holding's currency; a currency the data module no longer lists keeps its last price. */
function priceOf(holding: HoldingRow, prices: PriceBook): number {
  return prices.get(holding.currencyCode)?.value ?? holding.lastPrice ?? 0;
}

export function valuePortfolio(
  portfolio: PortfolioRow,
  holdings: readonly HoldingRow[],
  prices: PriceBook,
): Portfolio {
  const assets = holdings
    .filter((h) => h.shares > 0 || h.walletDollars > 0)
    .map((h): PortfolioAsset => {
      const sharesValue = h.shares * priceOf(h, prices);
      return {
        id: h.id,
        currencyName: prices.get(h.currencyCode)?.currencyName ?? h.currencyCode,
        currencyCode: h.currencyCode,
        shares: h.shares,
        sharesValueInDollars: sharesValue,
        assetWalletDollars: h.walletDollars,
        totalValueInDollars: sharesValue + h.walletDollars,
        lastUpdated: h.updatedAt.toISOString(),
      };
    })
    .sort((a, b) => b.totalValueInDollars - a.totalValueInDollars);
  const dollarBalance = sum(assets.map((a) => a.assetWalletDollars));
  const shareBalance = sum(assets.map((a) => a.sharesValueInDollars));
  const lastChange = Math.max(
    portfolio.createdAt.getTime(),
    ...holdings.map((h) => h.updatedAt.getTime()),
  );
  return {
    id: portfolio.id,
    dollarBalance,
    shareBalance,
    totalWorth: dollarBalance + shareBalance,
    lastUpdated: new Date(lastChange).toISOString(),
    assets,
  };
}

/** Unrealised gain: Σ shares × (current price − price when acquired) = value − cost of the shares. */
export function unrealisedProfit(holdings: readonly HoldingRow[], prices: PriceBook): number {
  return sum(
    holdings.filter((h) => h.shares > 0).map((h) => h.shares * priceOf(h, prices) - h.costBasis),
  );
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
