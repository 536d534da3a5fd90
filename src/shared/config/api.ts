import { z } from 'zod';
import { cidrList, commaList, positiveInt, positiveNumber } from './fields.ts';

// Configuration: the application API (sessions, sign-in limits, uploads, its calls to the data
// module, its rate limits).

/** Where the web front end's development server runs. */
export const DEV_WEB_ORIGIN = 'http://localhost:4200';

// Hops rather than "trust the header": each proxy appends the address it saw, so only the
// rightmost entries (as many as there are proxies) are not written by the client.
const proxyHops = z
  .string()
  .regex(/^(true|false|yes|no|\d{1,2})$/, 'true, false or a number of proxy hops')
  .transform((v) => {
    if (v === 'true' || v === 'yes') return 1;
    if (v === 'false' || v === 'no') return 0;
    return Number(v);
  });

// A hop count, or the networks the proxies live in: either way the client address is found by
// walking X-Forwarded-For from the right (src/shared/http/clientAddress.ts).
const proxyTrust = z.string().transform((value, ctx): number | string[] => {
  const hops = proxyHops.safeParse(value);
  if (hops.success) return hops.data;
  const networks = cidrList.safeParse(value);
  if (networks.success && networks.data.length > 0) return networks.data;
  ctx.addIssue({
    code: 'custom',
    message:
      'true, false, a number of proxy hops, or a comma-separated CIDR list such as 10.0.0.0/8,127.0.0.1/32',
  });
  return z.NEVER;
});

export const apiSection = z.object({
  DATA_URL: z
    .url()
    .optional()
    .describe('How the API reaches the data module (default: http://127.0.0.1:DATA_PORT).'),
  DATA_TOKEN: z.string().min(1).optional().describe("The API's service token for the data module."),
  NODE_ENV: z.string().default('development').describe('production makes SESSION_KEYS mandatory.'),
  SESSION_KEYS: commaList
    .pipe(z.array(z.string().min(32, 'each session key needs at least 32 characters')).min(1))
    .optional()
    .describe(
      'Comma-separated secrets signing session cookies, newest first (random per start when unset).',
    ),
  SESSION_IDLE_MINUTES: positiveNumber
    .default(30)
    .describe('A session unused this long is over (minutes, fractions allowed).'),
  SESSION_ABSOLUTE_HOURS: positiveNumber
    .default(12)
    .describe('A session is over this long after sign-in, used or not (hours).'),
  SESSIONS_MAX_PER_USER: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000)
    .default(10)
    .describe(
      "Signed-in sessions one user may hold; signing in once more ends the user's oldest session " +
        '(and its live connections).',
    ),
  API_TRUST_PROXY: proxyTrust
    .default(0)
    .describe(
      'Reverse proxies in front of the API whose X-Forwarded-For/-Proto/-Host are trusted: a hop ' +
        'count (true = 1), or a comma-separated CIDR list of the networks they live in (e.g. ' +
        '10.0.0.0/8,127.0.0.1/32). The client address is the entry that many from the right, or ' +
        'the rightmost entry outside those networks; never the client-written leftmost one.',
    ),
  API_ALLOWED_ORIGINS: z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((origin) => origin.trim().replace(/\/$/, ''))
        .filter(Boolean),
    )
    .pipe(z.array(z.url()))
    .optional()
    .describe(
      'Comma-separated origins (scheme://host[:port]) of web clients served from elsewhere that may ' +
        `call the API with the session cookie. Unset: ${DEV_WEB_ORIGIN} (the front end's dev server) ` +
        'unless NODE_ENV=production, then none.',
    ),
  LOGIN_MAX_FAILURES_PER_ACCOUNT: positiveInt
    .default(10)
    .describe('Failed logins for one account within LOGIN_ACCOUNT_WINDOW_MINUTES before 429.'),
  LOGIN_ACCOUNT_WINDOW_MINUTES: positiveInt.default(15).describe('Window of the account limit.'),
  LOGIN_MAX_FAILURES_PER_ADDRESS: positiveInt
    .default(100)
    .describe('Failed logins from one client address within LOGIN_ADDRESS_WINDOW_MINUTES.'),
  LOGIN_ADDRESS_WINDOW_MINUTES: positiveInt.default(60).describe('Window of the address limit.'),
  SIGNUP_MAX_PER_ADDRESS: positiveInt
    .default(100)
    .describe('Sign-up attempts from one client address within an hour before 429.'),
  UPLOAD_MAX_BYTES: positiveInt
    .default(5 * 1024 * 1024)
    .describe('Largest profile picture accepted, in bytes.'),
  UPLOAD_MAX_PIXELS: positiveInt
    .default(25_000_000)
    .describe('Largest profile picture accepted, in pixels (width × height).'),
  UPLOAD_DECODE_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(64)
    .default(2)
    .describe(
      'Profile pictures decoded at once per API process (each may hold ~100 MB while it runs).',
    ),
  UPLOAD_DECODE_QUEUE: z.coerce
    .number()
    .int()
    .min(0)
    .max(10_000)
    .default(16)
    .describe(
      'Uploads that may wait for a decoding slot; one more gets 503 with Retry-After at once.',
    ),
  DATA_TIMEOUT_MS: positiveInt
    .default(5000)
    .describe('Time-out of one API call to the data module (ms).'),
  DATA_CACHE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(2000)
    .describe(
      'How long the API reuses a snapshot of current prices while it cannot hear changes (ms); while it hears them, until the next change (at most a minute). 0: never reused.',
    ),
  API_RATE_LIMIT_ANONYMOUS: z.coerce
    .number()
    .int()
    .min(0)
    .default(60)
    .describe(
      'History requests per minute one client address may make to the API without signing in (429 with Retry-After past it; 0: no limit).',
    ),
  API_ANONYMOUS_READS_MAX_POINTS: positiveInt
    .default(50_000)
    .describe(
      'Points (buckets, as HISTORY_MAX_POINTS counts them) the history and candle reads in progress for callers not signed in may ask for together, all addresses counted; a read that does not fit gets 503 with Retry-After at once (one always fits when none runs). Signed-in users are not counted.',
    ),
  API_RATE_LIMIT_SIGNED_IN: z.coerce
    .number()
    .int()
    .min(0)
    .default(600)
    .describe(
      'History requests (price and portfolio history) per minute one signed-in user may make to the API (0: no limit).',
    ),
});
