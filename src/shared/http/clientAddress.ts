import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';
import type { Context, Next } from 'koa';

// Which address a request comes from, behind reverse proxies or not. Each proxy appends the
// address it received the request from to X-Forwarded-For, so the header is trustworthy only
// from the right: walking from the socket's peer leftwards through the header, the client is the
// first address not a trusted proxy. The leftmost entry is whatever the client wrote.

/** Trusted proxies: a number of hops, or the networks (CIDRs) they live in. */
export type ProxyTrust = number | readonly string[];

/** IPv4 clients on a dual-stack socket appear as ::ffff:a.b.c.d. */
export function plainAddress(ip: string): string {
  return ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;
}

/** Whether an address lies in one of the CIDRs (node's BlockList does the matching). */
export function networkMatcher(cidrs: readonly string[]): (ip: string) => boolean {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [address = '', prefix = ''] = cidr.split('/');
    list.addSubnet(address, Number(prefix), isIP(address) === 6 ? 'ipv6' : 'ipv4');
  }
  return (ip) => {
    const address = plainAddress(ip);
    const family = isIP(address);
    if (family === 4) return list.check(address, 'ipv4');
    if (family === 6) return list.check(address, 'ipv6');
    return false;
  };
}

function proxyTest(trust: ProxyTrust): (ip: string, hop: number) => boolean {
  if (typeof trust === 'number') return (_ip, hop) => hop < trust;
  const inTrustedNetwork = networkMatcher(trust);
  return (ip) => inTrustedNetwork(ip);
}

export function trustsProxies(trust: ProxyTrust): boolean {
  return typeof trust === 'number' ? trust > 0 : trust.length > 0;
}

/**
 * The client's address: the socket's peer, or, while that address is a trusted proxy, the next
 * X-Forwarded-For entry to its left. An entry that is no address stops the walk (only a client
 * writes such a thing).
 */
export function forwardedClient(peer: string, forwardedFor: string, trust: ProxyTrust): string {
  const trusted = proxyTest(trust);
  const chain = [
    plainAddress(peer),
    ...forwardedFor
      .split(',')
      .map((entry) => plainAddress(entry.trim()))
      .filter(Boolean)
      .reverse(),
  ];
  let client = chain[0] ?? '';
  for (let hop = 0; hop + 1 < chain.length && trusted(chain[hop]!, hop); hop++) {
    const next = chain[hop + 1]!;
    if (!isIP(next)) break;
    client = next;
  }
  return client;
}

/**
 * The client's address of a raw request, as `ctx.ip` is with `clientAddress(trust)` before it
 * (the socket's peer when no proxy is trusted): for code that answers before Koa.
 */
export function requestClientAddress(trust: ProxyTrust): (req: IncomingMessage) => string {
  if (!trustsProxies(trust)) return (req) => req.socket.remoteAddress ?? '';
  return (req) =>
    forwardedClient(
      req.socket.remoteAddress ?? '',
      String(req.headers['x-forwarded-for'] ?? ''),
      trust,
    );
}

const FORWARDED_HEADERS = ['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host'];

/**
 * Sets ctx.ip from the trusted part of X-Forwarded-For. The app runs with `proxy: true` (so Koa
 * honours X-Forwarded-Proto/-Host); a request whose peer is no trusted proxy has those headers
 * dropped first, so only proxies can set them.
 */
export function clientAddress(trust: ProxyTrust) {
  const trusted = proxyTest(trust);
  return async function resolveClientAddress(ctx: Context, next: Next) {
    const peer = ctx.req.socket.remoteAddress ?? '';
    if (!trusted(plainAddress(peer), 0)) {
      for (const header of FORWARDED_HEADERS) delete ctx.req.headers[header];
    }
    ctx.request.ip = forwardedClient(peer, ctx.get('x-forwarded-for'), trust);
    await next();
  };
}
