import type { Context } from 'koa';
import { valueOfShares } from '../../../shared/amounts.ts';
import { NotFoundError } from '../../../shared/errors.ts';
import { defineRoute, type RouteRegistry } from '../../../shared/http/routes.ts';
import { findCurrency } from '../../currencyKeys.ts';
import type { DataClient } from '../../dataClient.ts';
import { valueSchema } from '../portfolio/schema.ts';
import { valueBody, valueQuery } from './schema.ts';

interface ValueRequest {
  currencyCode?: string;
  currencyName?: string;
  shares: number;
}

/** shares × current price; 404 for a currency without a price. */
async function assetValue(ctx: Context, data: DataClient, request: ValueRequest) {
  const key = request.currencyCode ?? request.currencyName ?? '';
  const quote = await findCurrency(data, key);
  if (!quote) throw new NotFoundError(`Unknown currency '${key}'`, 'unknown_currency');
  const { shares } = request;
  ctx.body = { value: valueOfShares(shares, quote.value) };
}

const common = {
  path: '/api/currency/value',
  summary: 'Value of a number of shares at the current price',
  tags: ['currency'],
  responses: { 200: { description: 'shares × current price, in USD', schema: valueSchema } },
  errors: [404, 503],
};

/** Not mounted in the documentation profile, which runs without market data. */
export function registerCurrencyRoutes(registry: RouteRegistry, data: DataClient) {
  registry.add(
    defineRoute({
      ...common,
      method: 'post',
      operationId: 'assetValue',
      body: valueBody,
      errors: [...common.errors, 403, 415],
      handler: (ctx, { body }) => assetValue(ctx, data, body),
    }),
  );
  registry.add(
    defineRoute({
      ...common,
      method: 'get',
      operationId: 'assetValueByQuery',
      query: valueQuery,
      handler: (ctx, { query }) => assetValue(ctx, data, query),
    }),
  );
}
