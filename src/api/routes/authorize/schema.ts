import { z } from 'zod';
import { errorBodySchema } from '../../../shared/http/routes.ts';

export const authorizedSchema = z
  .object({ authorized: z.boolean() })
  .meta({ id: 'AuthorizeResponse', description: 'Whether the request is signed in afterwards.' });

/** The identity routes' errors: the common error body with `authorized` beside `error`. */
export const authorizeErrorSchema = errorBodySchema.extend({ authorized: z.boolean() }).meta({
  id: 'AuthorizeError',
  description:
    'An error of an identity route: `authorized` is false on signup and login, and tells ' +
    'whether the session is signed in on isloggedin and logout.',
});

const codePoints = (value: string) => [...value].length;

export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 256;

// Any string is a password, including a client-side SHA-256 hex digest: it is used as it arrives.
const newPassword = z
  .string()
  .refine((p) => codePoints(p) >= PASSWORD_MIN, `must be at least ${PASSWORD_MIN} characters`)
  .refine((p) => codePoints(p) <= PASSWORD_MAX, `must be at most ${PASSWORD_MAX} characters`)
  .meta({ description: `${PASSWORD_MIN} to ${PASSWORD_MAX} characters, used exactly as sent.` });

export const signupBody = z
  .object({
    email: z.string().trim().max(254).pipe(z.email()).meta({ example: 'ada@example.com' }),
    username: z
      .string()
      .regex(/^[A-Za-z0-9._-]{3,32}$/, '3 to 32 letters, digits, dots, underscores or hyphens')
      .meta({ example: 'ada.l' }),
    password: newPassword,
  })
  .meta({ id: 'SignupRequest' });

export const loginBody = z
  .object({
    email: z.string().trim().min(1).max(254),
    // Longer than any password sign-up accepts, but bounded so nobody makes us hash megabytes.
    password: z.string().min(1).max(1024),
  })
  .meta({ id: 'LoginRequest' });
