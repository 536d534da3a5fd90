import type { Context, Next } from 'koa';
import { newsSentimentRequestSchema } from '../../../data/routes/newsSentiment/schema.ts';
import { idempotencyHeaders } from '../../../data/signals/idempotency.ts';
import { successSchema } from '../account/schema.ts';
import { UnauthorizedError } from '../../../shared/errors.ts';
import { networkMatcher } from '../../../shared/http/clientAddress.ts';
import { defineRoute, type RouteRegistry } from '../../../shared/http/routes.ts';
import type { DataClient } from '../../dataClient.ts';
import { forwardSecurity } from '../security.ts';

// The analysis service's news scorer posts to the API (a bug of the old system, whose API never
// had the route). The API passes the request on to the data module, which stores it: with the
// API's own token for callers from DATA_TRUSTED_NETWORKS (the service sends no credentials), or
// with the caller's own bearer token.

export interface NewsSentimentForwardDeps {
  data: DataClient;
  trustedNetworks: readonly string[];
}

const DATA_ROUTE = '/data/news-sentiment/add';

function trustedOrBearer(trustedNetworks: readonly string[]) {
  const isTrusted = networkMatcher(trustedNetworks);
  return async function mayForward(ctx: Context, next: Next) {
    if (ctx.get('authorization') || isTrusted(ctx.request.ip ?? '')) {
      await next();
      return;
    }
    throw new UnauthorizedError(
      'Send a data-module bearer token, or call from DATA_TRUSTED_NETWORKS',
      { 'WWW-Authenticate': 'Bearer realm="data"' },
    );
  };
}

export function registerNewsSentimentForward(
  registry: RouteRegistry,
  deps: NewsSentimentForwardDeps,
) {
  registry.add(
    defineRoute({
      method: 'post',
      path: '/api/news-sentiment/add',
      operationId: 'forwardNewsSentiment',
      summary: 'Store a news sentiment event (passed on to the data module)',
      description:
        `The same request and answer as the data module's POST ${DATA_ROUTE}, for clients that ` +
        'post it to the API. Callers from DATA_TRUSTED_NETWORKS need no credentials (the API ' +
        'uses its own data token); others send a data-module bearer token, passed on as is.',
      tags: ['signals'],
      security: forwardSecurity,
      before: [trustedOrBearer(deps.trustedNetworks)],
      headers: idempotencyHeaders,
      body: newsSentimentRequestSchema,
      responses: { 200: { description: 'Stored (or already stored)', schema: successSchema } },
      errors: [400, 401, 403, 415, 422, 503],
      handler: async (ctx, { headers }) => {
        // The caller's JSON as sent: the data module validates and reads it (its naive zone),
        // and keeps its Idempotency-Key (per token: the API's own for trusted callers).
        const answer = await deps.data.forward(
          DATA_ROUTE,
          ctx.request.body,
          ctx.get('authorization') || undefined,
          headers['Idempotency-Key'],
        );
        ctx.status = answer.status;
        ctx.set(answer.headers);
        ctx.body = answer.body ?? '';
      },
    }),
  );
}
