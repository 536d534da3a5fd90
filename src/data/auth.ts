import { BlockList, isIPv4, isIPv6 } from 'node:net';
import type { Context, Next } from 'koa';
import type { DatabasePool } from 'slonik';
import { ForbiddenError, UnauthorizedError } from '../shared/errors.ts';
import type { HeaderSpec } from '../shared/http/routes.ts';
import { verifyToken, type Scope } from './tokens/tokenStore.ts';

const CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="data"' };

/** How the guard's 401 answers are documented in /openapi.json. */
export const challengeHeaders: Record<string, HeaderSpec> = {
  'WWW-Authenticate': {
    description:
      'The bearer challenge: `Bearer realm="data"`, with `error="invalid_token"` for a bad token.',
    required: true,
  },
};

function trustedNetworks(cidrs: string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [address = '', prefix = ''] = cidr.split('/');
    list.addSubnet(address, Number(prefix), isIPv6(address) ? 'ipv6' : 'ipv4');
  }
  return list;
}

function clientAddress(ctx: Context): string {
  // IPv4 clients on a dual-stack socket appear as ::ffff:a.b.c.d.
  const ip = ctx.request.ip ?? '';
  return ip.startsWith('::ffff:') && isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
}

/**
 * Bearer-token guard of the data module. Callers from DATA_TRUSTED_NETWORKS pass without a
 * token, as existing deployments rely on; everyone else needs a token holding the scope.
 */
export function createScopeGuard(pool: DatabasePool, trustedCidrs: string[]) {
  const trusted = trustedNetworks(trustedCidrs);
  const isTrusted = (ip: string) =>
    trustedCidrs.length > 0 &&
    ((isIPv4(ip) && trusted.check(ip, 'ipv4')) || (isIPv6(ip) && trusted.check(ip, 'ipv6')));

  return function requireScope(scope: Scope) {
    return async function guard(ctx: Context, next: Next) {
      const header = ctx.get('authorization');
      if (!header && isTrusted(clientAddress(ctx))) {
        ctx.state.caller = { name: 'trusted-network', scopes: ['read', 'write'] };
        await next();
        return;
      }
      const match = /^Bearer\s+(\S+)$/i.exec(header);
      if (!match?.[1]) throw new UnauthorizedError('A bearer token is required', CHALLENGE);
      const caller = await verifyToken(pool, match[1]);
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
