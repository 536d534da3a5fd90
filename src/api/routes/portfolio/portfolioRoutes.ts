import type { DatabasePool } from 'slonik';
import { defineRoute, type RouteRegistry } from '../../../shared/http/routes.ts';
import { pricedCurrencyOf } from '../../currencyKeys.ts';
import type { DataClient } from '../../dataClient.ts';
import {
  applyHoldingDelta,
  holdingsOf,
  holdsAnything,
  portfolioOf,
} from '../../portfolio/holdings.ts';
import { needsPrices, valuePortfolio } from '../../portfolio/valuation.ts';
import { requireUser, signedInUser } from '../../session/requireUser.ts';
import { successSchema } from '../account/schema.ts';
import { sessionSecurity } from '../security.ts';
import { addBody, hasPortfolioSchema, portfolioSchema } from './schema.ts';

export interface PortfolioRouteDeps {
  pool: DatabasePool;
  data: DataClient;
  /** Told after a user's holdings changed (live portfolio updates). */
  onHoldingsChanged?: (userId: number) => void;
}

export const PORTFOLIO_TAG = ['portfolio'];

export function registerPortfolioRoutes(registry: RouteRegistry, deps: PortfolioRouteDeps) {
  registry.add(
    defineRoute({
      method: 'get',
      path: '/api/portfolio/get',
      operationId: 'getPortfolio',
      summary: 'The signed-in user’s portfolio at current prices',
      tags: PORTFOLIO_TAG,
      security: sessionSecurity,
      before: [requireUser],
      responses: { 200: { description: 'The portfolio', schema: portfolioSchema } },
      errors: [401, 503],
      handler: async (ctx) => {
        const portfolio = await portfolioOf(deps.pool, signedInUser(ctx));
        const holdings = await holdingsOf(deps.pool, portfolio.id);
        const prices = needsPrices(holdings) ? await deps.data.currentPrices() : new Map();
        ctx.body = valuePortfolio(portfolio, holdings, prices);
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'post',
      path: '/api/portfolio/add',
      operationId: 'addToPortfolio',
      summary: 'Add shares and/or wallet dollars to a holding (creating it if needed)',
      description:
        'The change is recorded with its time and the currency’s current price, which is also the ' +
        'acquisition price of added shares. Negative amounts remove; a holding never goes below zero (422). ' +
        'The currency by `currencyCode` or (older clients) `currencyName`; amounts may be numeric strings.',
      tags: PORTFOLIO_TAG,
      security: sessionSecurity,
      before: [requireUser],
      body: addBody,
      responses: { 200: { description: 'Recorded', schema: successSchema } },
      errors: [401, 403, 415, 422, 503],
      handler: async (ctx, { body }) => {
        const quote = await pricedCurrencyOf(deps.data, body);
        const userId = signedInUser(ctx);
        const portfolio = await portfolioOf(deps.pool, userId);
        await applyHoldingDelta(deps.pool, portfolio.id, {
          currencyCode: quote.currencyCode,
          shares: body.shares,
          walletDollars: body.walletDollars,
          price: quote.value,
        });
        deps.onHoldingsChanged?.(userId);
        ctx.body = { successful: true };
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'get',
      path: '/api/portfolio/empty',
      operationId: 'portfolioPresence',
      summary: 'Whether the portfolio holds any asset (shares or wallet dollars)',
      tags: PORTFOLIO_TAG,
      security: sessionSecurity,
      before: [requireUser],
      responses: { 200: { description: 'Answer', schema: hasPortfolioSchema } },
      errors: [401],
      handler: async (ctx) => {
        ctx.body = { hasPortfolio: await holdsAnything(deps.pool, signedInUser(ctx)) };
      },
    }),
  );
}
