import type { Context, Next } from 'koa';
import { AppError } from '../../shared/errors.ts';

export class NotSignedInError extends AppError {
  constructor(message = 'Sign in first') {
    super(401, 'not_signed_in', message);
  }
}

/** The signed-in user's id, or undefined for an anonymous request. */
export function currentUserId(ctx: Context): number | undefined {
  const userId = ctx.session?.userId;
  return typeof userId === 'number' ? userId : undefined;
}

/** Route guard: 401 without a live session; the user id is then in ctx.state.userId. */
export async function requireUser(ctx: Context, next: Next) {
  const userId = currentUserId(ctx);
  if (userId === undefined) throw new NotSignedInError();
  ctx.state.userId = userId;
  await next();
}

export function signedInUser(ctx: Context): number {
  const userId = ctx.state.userId as number | undefined;
  if (userId === undefined) throw new Error('route is missing the requireUser guard');
  return userId;
}

/** Routes whose `authorized` says whether the request itself signed the client in. */
const SIGN_IN_PATHS = new Set(['/api/authorize/signup', '/api/authorize/login']);

/**
 * Identity routes answer errors with their `authorized` field beside `error`; this sets that
 * up before any other middleware can throw. A failed signup or login signed nobody in, so it
 * says false even when an earlier session is still signed in (the old system's clients read
 * `{"authorized": false}` there); isloggedin and logout tell whether the session is signed in.
 */
export async function authorizeErrorShape(ctx: Context, next: Next) {
  if (ctx.path.startsWith('/api/authorize/')) {
    const signInRoute = SIGN_IN_PATHS.has(ctx.path);
    ctx.state.errorBodyExtra = {
      get authorized() {
        return !signInRoute && currentUserId(ctx) !== undefined;
      },
    };
  }
  await next();
}
