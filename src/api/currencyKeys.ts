import { NotFoundError, UnprocessableError } from '../shared/errors.ts';
import type { DisplayCurrency } from './dataAnswers.ts';
import type { DataClient } from './dataClient.ts';

// The old web front end names currencies by name ("Bitcoin") where the contract uses codes.
// Every route that takes either resolves it here, against the data module's currency list.

const CODE = /^[A-Za-z0-9]{1,15}$/;

/** The priced currency a code or a name (case ignored) designates; codes win. */
export async function findCurrency(
  data: DataClient,
  key: string,
): Promise<DisplayCurrency | undefined> {
  const prices = await data.currentPrices();
  const byCode = CODE.test(key) ? prices.get(key.toUpperCase()) : undefined;
  if (byCode) return byCode;
  const name = key.toLowerCase();
  return [...prices.values()].find((c) => c.currencyName.toLowerCase() === name);
}

/**
 * The code a path segment names (a code, or a priced currency's name); a well-formed code that
 * is not priced now still counts (holdings may outlive a currency's prices). 404 otherwise.
 */
export async function codeOfKey(data: DataClient, key: string): Promise<string> {
  const found = await findCurrency(data, key);
  if (found) return found.currencyCode;
  if (CODE.test(key)) return key.toUpperCase();
  throw new NotFoundError(`Unknown currency '${key}'`, 'unknown_currency');
}

/** The priced currency a request body names by currencyCode or currencyName; 422 otherwise. */
export async function pricedCurrencyOf(
  data: DataClient,
  body: { currencyCode?: string; currencyName?: string },
): Promise<DisplayCurrency> {
  const key = body.currencyCode ?? body.currencyName ?? '';
  const field = body.currencyCode !== undefined ? 'currencyCode' : 'currencyName';
  const found =
    body.currencyCode !== undefined
      ? await data.currentPrice(body.currencyCode)
      : await findCurrency(data, key);
  if (!found) {
    throw new UnprocessableError(
      `Unknown currency '${key}' (or it has no price yet)`,
      'unknown_currency',
      [{ path: `body.${field}`, message: 'not a priced currency' }],
    );
  }
  return found;
}
