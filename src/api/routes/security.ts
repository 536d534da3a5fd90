import { CSRF_HEADER } from '../session/csrf.ts';
import { SESSION_COOKIE } from '../session/sessionMiddleware.ts';

// OpenAPI security of the API: the session cookie, plus the CSRF header for the upload.

export const apiSecuritySchemes = {
  sessionCookie: {
    type: 'apiKey',
    in: 'cookie',
    name: SESSION_COOKIE,
    description: 'Set by signup and login (HttpOnly, SameSite=Lax, Secure over HTTPS).',
  },
  csrfToken: {
    type: 'apiKey',
    in: 'header',
    name: CSRF_HEADER,
    description: 'The value of the `csrf-token` cookie; required from browsers on the upload.',
  },
  dataBearer: {
    type: 'http',
    scheme: 'bearer',
    description:
      'A data-module service token (`platform token create`), passed on by the routes that forward.',
  },
} as const;

export const sessionSecurity = [{ sessionCookie: [] }];
/** Trusted networks need nothing; others send a data-module token with the write scope. */
export const forwardSecurity: Array<Record<string, string[]>> = [{}, { dataBearer: [] }];
export const uploadSecurity = [{ sessionCookie: [], csrfToken: [] }];
