import { randomBytes } from 'node:crypto';
import type { Context } from 'koa';

// OWASP's "device cookie" (Authentication cheat sheet, account vs address limits): a browser that
// once signed in to an account carries a signed proof of it. Its attempts on that account are not
// held back by the per-address limit, so attackers behind the same address (a company NAT, a
// campus proxy) cannot lock every user there out; the per-account limit still applies.
// The cookie is signed with SESSION_KEYS (koa's keygrip): it cannot be forged, only replayed by
// whoever stole it, and that holder already had a signed-in browser of that account.

export const DEVICE_COOKIE = 'device';
const DEVICE_COOKIE_MAX_AGE_MS = 180 * 24 * 3600 * 1000;
const VALUE = /^(\d{1,15})\.[A-Za-z0-9_-]{22}$/;

/** The account this browser proved a password for earlier, from its signed device cookie. */
export function deviceCookieUserId(ctx: Context): number | undefined {
  const value = ctx.cookies.get(DEVICE_COOKIE, { signed: true });
  const match = value ? VALUE.exec(value) : null;
  return match ? Number(match[1]) : undefined;
}

/** Issued at every successful sign-in or sign-up; a fresh nonce each time. */
export function issueDeviceCookie(ctx: Context, userId: number): void {
  ctx.cookies.set(DEVICE_COOKIE, `${userId}.${randomBytes(16).toString('base64url')}`, {
    signed: true,
    httpOnly: true,
    sameSite: 'lax',
    overwrite: true,
    path: '/api/authorize',
    maxAge: DEVICE_COOKIE_MAX_AGE_MS,
  });
}
