import type { Context, Next } from 'koa';
import { ForbiddenError, UnauthorizedError } from '../shared/errors.ts';
import { networkMatcher, plainAddress } from '../shared/http/clientAddress.ts';
import type { HeaderSpec } from '../shared/http/routes.ts';
import type { Scope } from './tokens/tokenRules.ts';
import type { VerifiedTokens } from './tokens/verifiedTokens.ts';

const CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="data"' };

/** How the guard's 401 answers are documented in /openapi.json. */
export const challengeHeaders: Record<string, HeaderSpec> = {
  'WWW-Authenticate': {
    description:
      'The bearer challenge: `Bearer realm="data"`, with `error="invalid_token"` for a bad token.',
    required: true,
  },
};

/**
 * Bearer-token guard of the data module. Callers from DATA_TRUSTED_NETWORKS pass without a
 * token, as existing deployments rely on; everyone else needs a token holding the scope.
 */
export function createScopeGuard(tokens: VerifiedTokens, trustedCidrs: string[]) {
  const isTrusted = networkMatcher(trustedCidrs);

  return function requireScope(scope: Scope) {
    return async function guard(ctx: Context, next: Next) {
      const header = ctx.get('authorization');
      if (!header && isTrusted(plainAddress(ctx.request.ip ?? ''))) {
        ctx.state.caller = { name: 'trusted-network', scopes: ['read', 'write'] };
        await next();
        return;
      }
      const match = /^Bearer\s+(\S+)$/i.exec(header);
      if (!match?.[1]) throw new UnauthorizedError('A bearer token is required', CHALLENGE);
      const caller = await tokens.verify(match[1]);
      if (!caller) {
        throw new UnauthorizedError('The token is unknown or revoked', {
          'WWW-Authenticate': 'Bearer realm="data", error="invalid_token"',
        });
      }
      if (!caller.scopes.includes(scope)) {
        throw new ForbiddenError(`This route needs the '${scope}' scope`, 'insufficient_scope');
      }
      ctx.state.caller = caller;
      await next();
    };
  };
}

export type ScopeGuard = ReturnType<typeof createScopeGuard>;

export const bearerSecurity = (scope: Scope) => [{ bearerAuth: [scope] }];
