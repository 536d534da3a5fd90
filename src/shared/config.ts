import { userInfo } from 'node:os';
import { z } from 'zod';
import { DEFAULT_MAX_FUTURE_SECONDS } from '../data/ingest/candleValidation.ts';
import { isKnownTimeZone } from './time/timeZones.ts';
import { ConfigError } from './configError.ts';

// Kept here for its callers; it lives apart so that the CLI can tell it without loading the schema.
export { ConfigError };

// The whole platform's configuration, parsed once at start-up from the environment (and a few CLI
// flags). Every variable is optional; bad values stop start-up with one message listing them all.

const booleanFromEnv = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

/** Price sources the harvester knows (see src/data/market/sources/). */
export const MARKET_SOURCE_NAMES = ['simulated', 'coinbase', 'binance', 'kraken'] as const;
export type MarketSourceName = (typeof MARKET_SOURCE_NAMES)[number];

/** Where the web front end's development server runs. */
const DEV_WEB_ORIGIN = 'http://localhost:4200';

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().min(1);
const positiveNumber = z.coerce.number().positive();

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

const cidrList = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean),
  )
  .pipe(z.array(z.union([z.cidrv4(), z.cidrv6()])));

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

export const configSchema = z.object({
  DATABASE_URL: z
    .url({ protocol: /^postgres(ql)?$/ })
    .default('postgres://127.0.0.1:5432/platform')
    .transform(withDefaultUser)
    .describe('PostgreSQL/TimescaleDB connection string; the database is created if missing.'),
  READ_DATABASE_URL: z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((url) => url.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.url({ protocol: /^postgres(ql)?$/ }).transform(withDefaultUser)).min(1))
    .optional()
    .describe(
      'Comma-separated connection strings of physical streaming replicas of DATABASE_URL: history, ' +
        'candles, export and the signal read-backs read from them (writes, tokens, sessions, jobs, ' +
        'the snapshot built once per change, and read-your-writes stay on DATABASE_URL). Unset: ' +
        'every read goes to DATABASE_URL.',
    ),
  REPLICA_MAX_LAG_SECONDS: z.coerce
    .number()
    .min(0)
    .max(3600)
    .default(10)
    .describe(
      'A replica further behind the primary than this (measured from WAL positions, so right when ' +
        'the primary is idle), or unreachable, is left aside and DATABASE_URL answers until it catches up.',
    ),
  REPLICA_CONNECT_TIMEOUT_MS: positiveInt
    .default(1000)
    .describe(
      'Longest wait for a new connection to a replica (ms); past it the read goes to DATABASE_URL.',
    ),
  HOST: z
    .string()
    .min(1)
    .default('127.0.0.1')
    .describe('Address the HTTP servers bind to (use 0.0.0.0 in containers).'),
  DATA_PORT: port.default(8085).describe('Port of the data module.'),
  API_PORT: port.default(8080).describe('Port of the application API.'),
  DATA_URL: z
    .url()
    .optional()
    .describe('How the API reaches the data module (default: http://127.0.0.1:DATA_PORT).'),
  DATA_TOKEN: z.string().min(1).optional().describe("The API's service token for the data module."),
  DATA_TRUSTED_NETWORKS: cidrList
    .default([])
    .describe(
      "Comma-separated CIDRs whose callers reach /data/** (and the API's /api/news-sentiment/add) without a token.",
    ),
  DATA_NAIVE_TIME_ZONE: z
    .string()
    .refine(isKnownTimeZone, 'unknown time zone (use an IANA name such as Europe/Berlin)')
    .default('UTC')
    .describe(
      'IANA time zone in which the data module reads signal timestamps sent without a zone (clients that send naive local times).',
    ),
  PLATFORM_LOAD_CURRENCIES: booleanFromEnv
    .default(true)
    .describe(
      'Refresh the currency list from an exchange at start-up (false: use the shipped list).',
    ),
  MARKET_SOURCE: z
    .string()
    .regex(
      /^[a-z]+(,[a-z]+)*$/,
      'a comma-separated list of source names such as simulated,coinbase',
    )
    .refine(
      (list) =>
        list.split(',').every((name) => (MARKET_SOURCE_NAMES as readonly string[]).includes(name)),
      `every source must be one of ${MARKET_SOURCE_NAMES.join(', ')}`,
    )
    .default('simulated')
    .describe(
      'Price source(s) of the harvester, in order of preference: simulated (offline default), ' +
        'coinbase, binance, kraken. The first source that prices a currency wins.',
    ),
  MARKET_SIMULATED_SEED: z
    .string()
    .min(1)
    .default('platform')
    .describe('Seed of the simulated market: the same seed gives the same price paths.'),
  SIMULATED_HISTORY_DAYS: z.coerce
    .number()
    .int()
    .min(0)
    .max(366)
    .default(30)
    .describe(
      'Days of one-minute history the first start loads in the background with MARKET_SOURCE=simulated ' +
        'and a database without price history (the simulated paths that lead to the live prices, for ' +
        'every currency, recorded per day like any backfill; never with a real exchange, never over ' +
        'existing data, never twice); 0 turns it off.',
    ),
  MARKET_REQUEST_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(50)
    .max(60000)
    .default(4000)
    .describe('Time-out of one request to an exchange (each retry gets its own).'),
  COINBASE_API_URL: z
    .url()
    .default('https://api.coinbase.com')
    .describe('Base URL of the Coinbase public API (exchange rates).'),
  BINANCE_API_URL: z
    .url()
    .default('https://api.binance.com')
    .describe('Base URL of the Binance spot API (ticker prices; klines for `backfill --source`).'),
  BINANCE_ARCHIVE_URL: z
    .url()
    .default('https://data.binance.vision')
    .describe(
      "Base URL of Binance's public kline archives (`backfill --source binance-archive`: data/spot/monthly|daily/klines/… zips with their .CHECKSUM).",
    ),
  KRAKEN_API_URL: z
    .url()
    .default('https://api.kraken.com')
    .describe(
      'Base URL of the Kraken public API (ticker; OHLC for healing and `backfill --source kraken`).',
    ),
  COINBASE_EXCHANGE_API_URL: z
    .url()
    .default('https://api.exchange.coinbase.com')
    .describe(
      'Base URL of the Coinbase Exchange public API (candles for healing and `backfill --source coinbase`).',
    ),
  HARVEST_INTERVAL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(3600)
    .default(5)
    .describe('Seconds between two harvesting cycles.'),
  HISTORY_MAX_POINTS: z.coerce
    .number()
    .int()
    .min(1)
    .default(50000)
    .describe('Most points one history answer may hold; larger requests go to the export route.'),
  HISTORY_CACHE_MB: z.coerce
    .number()
    .int()
    .min(0)
    .max(65_536)
    .default(256)
    .describe(
      'Megabytes of formatted history the data module keeps for answers read from settled rows (rollups and raw rows that change only with a recomputed backfill; least recently used go first; 0 turns it off).',
    ),
  ROLLUP_SETTLE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(86_400)
    .default(120)
    .describe(
      'Rollup tables materialise only buckets that ended this long ago; newer writes may still be in flight; older ones are marked for recomputation by the writers (src/data/prices/invalidations.ts).',
    ),
  HEAL_LOOKBACK_HOURS: z.coerce
    .number()
    .int()
    .min(0)
    .max(8784)
    .default(72)
    .describe(
      'Gap healing: the worker job (every 15 minutes) fills minutes without observation in this many past hours from the candle history of the exchanges MARKET_SOURCE names, in its order (Binance when it names none); 0 turns the job off.',
    ),
  BACKFILL_HTTP_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(300_000)
    .default(15_000)
    .describe('Time-out of one exchange request during `platform backfill --source`.'),
  PRICE_MAX_FUTURE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(3600)
    .default(DEFAULT_MAX_FUTURE_SECONDS)
    .describe('Clock skew allowed for price times: later bulk prices are rejected (400).'),
  PRICE_BULK_MAX_ITEMS: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .default(100_000)
    .describe('Most candles or ticks one POST /data/prices/bulk request may hold.'),
  PRICE_BULK_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(1024 * 1024 * 1024)
    .default(16 * 1024 * 1024)
    .describe('Largest body, in bytes, of one POST /data/prices/bulk request.'),
  SIGNAL_BULK_MAX_ITEMS: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .default(10_000)
    .describe(
      'Most items one bulk request of news sentiment, predictions or training sessions may hold.',
    ),
  SIGNAL_BULK_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(1024 * 1024 * 1024)
    .default(10 * 1024 * 1024)
    .describe('Largest body, in bytes, of one bulk request of signal inputs.'),
  NODE_ENV: z.string().default('development').describe('production makes SESSION_KEYS mandatory.'),
  SESSION_KEYS: z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((key) => key.trim())
        .filter(Boolean),
    )
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
  DATABASE_STATEMENT_TIMEOUT_MS: positiveInt
    .default(30_000)
    .describe(
      'Longest SQL statement (ms): the server cancels it, and the client gives up on its connection 1 s later (a database that stopped answering).',
    ),
  DATABASE_POOL_SIZE: z.coerce
    .number()
    .int()
    .min(2)
    .max(1000)
    .default(10)
    .describe(
      'Connections of the main database pool: health, sign-in, sessions, tokens, snapshots and writes.',
    ),
  DATABASE_READ_POOL_SIZE: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(8)
    .describe(
      'Connections of the separate pool for expensive reads (history, candles, export), so those never make health, sign-in, tokens or writes wait.',
    ),
  HISTORY_MAX_CONCURRENT: positiveInt
    .default(4)
    .describe(
      'History answers (/data/currency/history) computed at once; more wait in a short queue, then get 503 with Retry-After.',
    ),
  CANDLES_MAX_CONCURRENT: positiveInt
    .default(2)
    .describe('Candle answers (/data/candles/{code}) computed at once; the same queue and 503.'),
  EXPORT_MAX_CONCURRENT: positiveInt
    .default(2)
    .describe(
      'Candle exports (/data/candles/{code}/export) streaming at once; the same queue and 503.',
    ),
  ADMISSION_QUEUE_LENGTH: z.coerce
    .number()
    .int()
    .min(0)
    .max(10_000)
    .default(8)
    .describe(
      'Requests that may wait for each of those limits; a request finding the queue full gets 503 with Retry-After at once.',
    ),
  ADMISSION_QUEUE_WAIT_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(60_000)
    .default(2000)
    .describe('Longest wait in such a queue before a 503 with Retry-After (ms).'),
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
  DATABASE_CONNECT_TIMEOUT_MS: positiveInt
    .default(5000)
    .describe('Longest wait for a new database connection (ms).'),
  REQUEST_TIMEOUT_MS: positiveInt
    .default(60_000)
    .describe(
      'Longest time an HTTP request may take before it is answered 503 (a dependency hanging).',
    ),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('Log level.'),
  OTEL_EXPORTER_OTLP_ENDPOINT: z
    .url()
    .optional()
    .describe(
      'OTLP/HTTP base URL (e.g. http://collector:4318); traces go to <url>/v1/traces. ' +
        'Unset: no tracing at all.',
    ),
  OTEL_SERVICE_NAME: z
    .string()
    .min(1)
    .default('market-data-platform')
    .describe('service.name of exported traces (give each role its own in a deployment).'),
  WORKER_METRICS_PORT: port
    .default(9464)
    .describe(
      'Port of the ops listener (health and /metrics) of a process without the data role: a ' +
        'worker, or an API (the public API port serves no /metrics). With the data role, /metrics ' +
        'is on DATA_PORT.',
    ),
  SHUTDOWN_DRAIN_SECONDS: z.coerce
    .number()
    .min(0)
    .max(300)
    .default(0)
    .describe(
      'On SIGTERM, seconds readiness answers 503 while the process still serves, so load ' +
        'balancers stop routing to it (set to about their probe interval; 0 locally).',
    ),
  SHUTDOWN_GRACE_SECONDS: z.coerce
    .number()
    .min(0)
    .max(3600)
    .default(10)
    .describe(
      'On SIGTERM, how long in-flight requests and jobs may take to finish before connections ' +
        "are cut; keep drain + grace below the orchestrator's kill timeout.",
    ),
});

export type Config = z.infer<typeof configSchema>;

/**
 * Like libpq, connect as PGUSER or the operating-system user when the URL names no user
 * (node-postgres would otherwise rely on $USER, which services and CI often lack).
 */
export function withDefaultUser(url: string): string {
  const parsed = new URL(url);
  if (parsed.username) return url;
  parsed.username = process.env.PGUSER ?? userInfo().username;
  return parsed.toString();
}

/** Parses the environment; empty strings count as unset so `FOO=` falls back to the default. */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  overrides: Partial<Record<keyof Config, string>> = {},
): Config {
  const input: Record<string, string> = {};
  for (const key of Object.keys(configSchema.shape)) {
    const value = overrides[key as keyof Config] ?? env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const parsed = configSchema.safeParse(input);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`),
    );
  }
  return parsed.data;
}

/** Web origins allowed to call the API with credentials (API_ALLOWED_ORIGINS or its default). */
export function allowedOrigins(config: Config): string[] {
  return config.API_ALLOWED_ORIGINS ?? (config.NODE_ENV === 'production' ? [] : [DEV_WEB_ORIGIN]);
}

export function dataModuleUrl(config: Config): string {
  return config.DATA_URL ?? `http://127.0.0.1:${config.DATA_PORT}`;
}
