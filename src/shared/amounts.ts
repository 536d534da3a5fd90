import { z } from 'zod';
import { UnprocessableError } from './errors.ts';

// Bounds on prices and quantities: the one module every writer (prices, signals, holdings) and
// every product of them uses. Within them, price × shares, sums over portfolios and sums of
// volumes over years of candles stay far inside double precision, so no computed figure becomes
// Infinity (which JSON turns into null). A bulk price of 1e307 once did exactly that.

/** USD per unit: prices, price differences and percentages of the signal inputs. */
export const MAX_PRICE = 1e12;
/** Units traded in one candle. */
export const MAX_VOLUME = 1e18;
/** Units of one currency in one holding. */
export const MAX_SHARES = 1e15;
/** Dollars in one holding's wallet. So one holding is worth at most MAX_SHARES × MAX_PRICE (1e27) plus MAX_DOLLARS. */
export const MAX_DOLLARS = 1e15;

/** A price or price difference in USD, either sign (1e400 parses to Infinity: refused too). */
export const signedPrice = z.number().min(-MAX_PRICE).max(MAX_PRICE);

/** A number of shares to value. */
export const shareCount = z.number().min(0).max(MAX_SHARES);

/** Shares added to a holding; negative removes. */
export const sharesDelta = z.number().min(-MAX_SHARES).max(MAX_SHARES);

/** Dollars added to a wallet; negative removes. */
export const dollarsDelta = z.number().min(-MAX_DOLLARS).max(MAX_DOLLARS);

/** Why a stored or received price cannot be used, or null when it can. */
export function priceProblem(price: number): string | null {
  if (!(price > 0)) return 'prices must be positive numbers';
  if (!Number.isFinite(price)) return 'prices must be finite';
  if (price > MAX_PRICE) return `prices must be ≤ ${MAX_PRICE}`;
  return null;
}

/** Why a traded volume cannot be stored, or null when it can. */
export function volumeProblem(volume: number): string | null {
  if (!(volume >= 0) || !Number.isFinite(volume)) return 'volume must be a number ≥ 0';
  if (volume > MAX_VOLUME) return `volume must be ≤ ${MAX_VOLUME}`;
  return null;
}

/**
 * shares × price, checked: a price beyond MAX_PRICE (stored before the bound existed) would make
 * the product meaningless or infinite, so it is a 422 naming the price rather than a null.
 */
export function valueOfShares(shares: number, price: number): number {
  const value = shares * price;
  if (!Number.isFinite(value) || Math.abs(value) > MAX_SHARES * MAX_PRICE) {
    throw new UnprocessableError(
      `The value of ${shares} shares at ${price} is beyond what can be computed exactly`,
      'value_out_of_range',
      [{ path: 'price', message: `prices are bounded by ${MAX_PRICE}` }],
    );
  }
  return value;
}

/** Refuses a holding that would pass MAX_SHARES or MAX_DOLLARS after a change (422). */
export function assertHoldingWithinBounds(shares: number, dollars: number): void {
  if (shares > MAX_SHARES) {
    throw new UnprocessableError(
      `A holding can hold at most ${MAX_SHARES} shares; this change would make it ${shares}`,
      'holding_too_large',
      [{ path: 'body.shares', message: `the holding would pass ${MAX_SHARES} shares` }],
    );
  }
  if (dollars > MAX_DOLLARS) {
    throw new UnprocessableError(
      `A wallet can hold at most ${MAX_DOLLARS} dollars; this change would make it ${dollars}`,
      'holding_too_large',
      [{ path: 'body.walletDollars', message: `the wallet would pass ${MAX_DOLLARS} dollars` }],
    );
  }
}
