import type { Context } from 'koa';
import type { DatabasePool } from 'slonik';
import { AppError, ValidationError } from '../../../shared/errors.ts';
import { defineRoute, type RouteRegistry } from '../../../shared/http/routes.ts';
import type { Logger } from '../../../shared/logger.ts';
import { counter } from '../../../shared/metrics.ts';
import { deviceCookieUserId, issueDeviceCookie } from '../../identity/deviceCookie.ts';
import type { LoginThrottle } from '../../identity/loginThrottle.ts';
import { hashPassword, verifyPassword } from '../../identity/passwords.ts';
import {
  assertAvailable,
  createUser,
  findCredentials,
  updatePasswordHash,
} from '../../identity/users.ts';
import { clearCsrfCookie, issueCsrfToken } from '../../session/csrf.ts';
import { currentUserId, NotSignedInError } from '../../session/requireUser.ts';
import { authorizedSchema, authorizeErrorSchema, loginBody, signupBody } from './schema.ts';

export interface AuthorizeRouteDeps {
  pool: DatabasePool;
  throttle: LoginThrottle;
  sessionMaxAgeMs: number;
}

const logins = counter('api_login_attempts_total', 'Sign-in attempts by outcome.', ['outcome']);

const TAG = ['authorize'];
const signedIn = { description: 'Signed in', schema: authorizedSchema };

function refuseIfSignedIn(ctx: Context) {
  if (currentUserId(ctx) !== undefined) {
    throw new ValidationError('Already signed in; log out first', [], 'already_signed_in');
  }
}

/** A new session id for the user (the anonymous one, if any, is destroyed) and a new CSRF token. */
async function signIn(ctx: Context, userId: number, maxAgeMs: number) {
  const session = ctx.session;
  if (!session) throw new Error('the session middleware is missing');
  session.userId = userId;
  delete session.csrf;
  issueCsrfToken(ctx, maxAgeMs);
  issueDeviceCookie(ctx, userId);
  await session.regenerate();
  (ctx.state.logger as Logger).info({ userId }, 'signed in');
}

export function registerAuthorizeRoutes(registry: RouteRegistry, deps: AuthorizeRouteDeps) {
  registry.add(
    defineRoute({
      method: 'post',
      path: '/api/authorize/signup',
      operationId: 'signup',
      summary: 'Create an account and sign in',
      description:
        'Email and username are unique without regard to case. Errors carry `authorized` beside `error`. ' +
        'Sign-ups per client address are limited per hour (429 with Retry-After past it).',
      tags: TAG,
      body: signupBody,
      responses: {
        200: { ...signedIn, description: 'Account created; the new user is signed in' },
      },
      errors: [403, 409, 415, 429],
      errorBody: authorizeErrorSchema,
      handler: async (ctx, { body }) => {
        refuseIfSignedIn(ctx);
        await deps.throttle.admitSignup(ctx.ip);
        await assertAvailable(deps.pool, body);
        const passwordHash = await hashPassword(body.password);
        const userId = await createUser(deps.pool, { ...body, passwordHash });
        await signIn(ctx, userId, deps.sessionMaxAgeMs);
        ctx.body = { authorized: true };
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'post',
      path: '/api/authorize/login',
      operationId: 'login',
      summary: 'Sign in with email and password',
      description:
        'Unknown email and wrong password get the same 401. Failed attempts are limited per account ' +
        'and per client address; past the limit every attempt gets 429 with Retry-After. A browser ' +
        'that signed in to the account before (its signed `device` cookie) is held to the account ' +
        'limit only, so failures of others behind the same address do not lock it out.',
      tags: TAG,
      body: loginBody,
      responses: { 200: signedIn },
      errors: [401, 403, 415, 429],
      errorBody: authorizeErrorSchema,
      handler: async (ctx, { body }) => {
        refuseIfSignedIn(ctx);
        const account = await findCredentials(deps.pool, body.email);
        const knownDevice = account !== null && deviceCookieUserId(ctx) === account.id;
        try {
          await deps.throttle.admit(body.email, ctx.ip, knownDevice);
        } catch (error) {
          logins.inc({ outcome: 'throttled' });
          (ctx.state.logger as Logger).warn({ ip: ctx.ip }, 'sign-in throttled');
          throw error;
        }
        const { valid, needsRehash } = await verifyPassword(account?.passwordHash, body.password);
        if (!account || !valid) {
          logins.inc({ outcome: 'rejected' });
          (ctx.state.logger as Logger).info({ ip: ctx.ip }, 'sign-in refused');
          throw new AppError(401, 'invalid_credentials', 'Unknown email or wrong password');
        }
        await deps.throttle.recordSuccess(body.email, ctx.ip, knownDevice);
        if (needsRehash) {
          await updatePasswordHash(deps.pool, account.id, await hashPassword(body.password));
        }
        await signIn(ctx, account.id, deps.sessionMaxAgeMs);
        logins.inc({ outcome: 'accepted' });
        ctx.body = { authorized: true };
      },
    }),
  );

  registry.add(
    defineRoute({
      method: 'get',
      path: '/api/authorize/isloggedin',
      operationId: 'isLoggedIn',
      summary: 'Whether this session is signed in',
      description: `Signed in, it also (re)sends the csrf-token cookie and X-CSRF-Token header.`,
      tags: TAG,
      responses: { 200: signedIn },
      errors: [401],
      errorBody: authorizeErrorSchema,
      handler: (ctx) => {
        if (currentUserId(ctx) === undefined) throw new NotSignedInError('Not signed in');
        issueCsrfToken(ctx, deps.sessionMaxAgeMs);
        ctx.body = { authorized: true };
      },
    }),
  );

  for (const method of ['get', 'post'] as const) {
    registry.add(
      defineRoute({
        method,
        path: '/api/authorize/logout',
        operationId: method === 'get' ? 'logout' : 'logoutPost',
        summary: 'End the session',
        description:
          'The session is destroyed on the server; its cookie no longer signs anyone in.',
        tags: TAG,
        responses: {
          200: { description: 'Signed out', schema: authorizedSchema },
          400: { description: 'Not signed in', schema: authorizeErrorSchema },
        },
        errors: [403],
        errorBody: authorizeErrorSchema,
        handler: (ctx) => {
          if (currentUserId(ctx) === undefined) {
            throw new ValidationError('Not signed in', [], 'not_signed_in');
          }
          (ctx.state.logger as Logger).info({ userId: currentUserId(ctx) }, 'signed out');
          ctx.session = null;
          clearCsrfCookie(ctx);
          ctx.body = { authorized: false };
        },
      }),
    );
  }
}
