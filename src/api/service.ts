import { sql } from 'slonik';
import { allowedOrigins, dataModuleUrl } from '../shared/config.ts';
import { pendingMigrations } from '../shared/db/migrationState.ts';
import { Readiness } from '../shared/http/health.ts';
import { RouteRegistry } from '../shared/http/routes.ts';
import { createHttpService } from '../shared/http/service.ts';
import type { Runtime } from '../shared/runtime.ts';
import { AnonymousReadBudget } from './anonymousReads.ts';
import { mountDashboard } from './dashboard.ts';
import { DataClient } from './dataClient.ts';
import { historyRateLimit } from './historyRateLimit.ts';
import { LoginThrottle } from './identity/loginThrottle.ts';
import { LiveGateway } from './live/liveGateway.ts';
import { pictureDecodingGate } from './pictures/imagePipeline.ts';
import { registerAccountRoutes } from './routes/account/accountRoutes.ts';
import { registerAuthorizeRoutes } from './routes/authorize/authorizeRoutes.ts';
import { registerCurrencyRoutes } from './routes/currency/currencyRoutes.ts';
import { registerMarketRoutes } from './routes/currency/marketRoutes.ts';
import { registerNewsSentimentForward } from './routes/newsSentiment/newsSentimentRoutes.ts';
import { registerHistoryRoutes } from './routes/portfolio/historyRoutes.ts';
import { registerPortfolioRoutes } from './routes/portfolio/portfolioRoutes.ts';
import { apiSecuritySchemes } from './routes/security.ts';
import { corsForAllowedOrigins } from './session/cors.ts';
import { crossSiteGuard } from './session/csrf.ts';
import { authorizeErrorShape } from './session/requireUser.ts';
import {
  createSessionMiddleware,
  sessionKeys,
  sessionTimeouts,
} from './session/sessionMiddleware.ts';

export const API_SERVICE_NAME = 'api';

export type ApiProfile = 'default' | 'docs';

export interface ApiServiceOptions {
  /** `docs` serves the reference without market data: no /api/currency/value, no data check. */
  profile?: ApiProfile;
  /** Where the data module listens (default DATA_URL, else http://127.0.0.1:DATA_PORT). */
  dataUrl?: string;
  /** The API's service token for the data module (default DATA_TOKEN). */
  dataToken?: string;
  readiness?: Readiness;
  /** Live updates: at most one price per code and portfolio per user per this many ms. */
  liveCoalesceMs?: number;
}

export function createApiService(runtime: Runtime, options: ApiServiceOptions = {}) {
  const { config } = runtime;
  const logger = runtime.logger.child({ service: API_SERVICE_NAME });
  const profile = options.profile ?? 'default';
  const data = new DataClient({
    baseUrl: options.dataUrl ?? dataModuleUrl(config),
    token: options.dataToken ?? config.DATA_TOKEN,
    timeoutMs: config.DATA_TIMEOUT_MS,
    cacheMs: config.DATA_CACHE_MS,
    events: runtime.changeEvents(),
    logger,
  });
  const timeouts = sessionTimeouts(config);
  const keys = sessionKeys(config, logger);

  // Live updates attach to the HTTP server once it listens (see start.ts); until then the
  // portfolio routes' notifications are no-ops.
  const live = new LiveGateway(runtime, {
    data,
    keys,
    timeouts,
    coalesceMs: options.liveCoalesceMs,
  });

  const registry = new RouteRegistry();
  registerAuthorizeRoutes(registry, {
    pool: runtime.pool,
    throttle: new LoginThrottle(runtime.pgPool, config),
    sessionMaxAgeMs: timeouts.absoluteSeconds * 1000,
  });
  const pictureDecoding = pictureDecodingGate({
    concurrency: config.UPLOAD_DECODE_CONCURRENCY,
    maxWaiting: config.UPLOAD_DECODE_QUEUE,
  });
  registerAccountRoutes(registry, {
    pool: runtime.pool,
    maxBytes: config.UPLOAD_MAX_BYTES,
    maxPixels: config.UPLOAD_MAX_PIXELS,
    decoding: pictureDecoding,
  });
  registerPortfolioRoutes(registry, {
    pool: runtime.pool,
    data,
    onHoldingsChanged: (userId) => live.holdingsChanged(userId),
  });
  const { limitHistory, anonymousOverLimit } = historyRateLimit(config);
  registerHistoryRoutes(registry, {
    pool: runtime.pool,
    data,
    maxPoints: config.HISTORY_MAX_POINTS,
    limitRate: limitHistory,
  });
  registerMarketRoutes(registry, {
    data,
    maxPoints: config.HISTORY_MAX_POINTS,
    limitRate: limitHistory,
    anonymousOverLimit,
    anonymousReads: new AnonymousReadBudget(config.API_ANONYMOUS_READS_MAX_POINTS),
  });
  if (profile !== 'docs') registerCurrencyRoutes(registry, data);
  registerNewsSentimentForward(registry, { data, trustedNetworks: config.DATA_TRUSTED_NETWORKS });

  const readiness = options.readiness ?? new Readiness();
  readiness.addCheck('database', async () => {
    await runtime.pool.query(sql.unsafe`SELECT 1`);
  });
  readiness.addCheck('migrations', async () => {
    const pending = await pendingMigrations(runtime.pool);
    if (pending.length > 0) throw new Error(`pending migrations: ${pending.join(', ')}`);
  });
  if (profile !== 'docs') readiness.addCheck('dataModule', () => data.ping());

  const cors = corsForAllowedOrigins(allowedOrigins(config));
  const service = createHttpService({
    name: API_SERVICE_NAME,
    logger,
    routes: registry,
    readiness,
    jsonLimit: '100kb',
    requestTimeoutMs: config.REQUEST_TIMEOUT_MS,
    trustProxy: config.API_TRUST_PROXY,
    // Metrics name routes, outcomes and load: not for the public port (the ops listener has them).
    metrics: false,
    earlyRefusalMiddleware: [cors],
    // What the CORS middleware gives a request without Origin.
    earlyRefusalHeaders: [['Vary', 'Origin']],
    middleware: (app) => [
      authorizeErrorShape,
      cors,
      createSessionMiddleware(app, {
        pool: runtime.pool,
        timeouts,
        keys,
        onSessionEnded: (idHash) => live.sessionEnded(idHash),
        maxPerUser: config.SESSIONS_MAX_PER_USER,
      }),
      crossSiteGuard(allowedOrigins(config)),
    ],
    extend: mountDashboard,
    openApi: {
      title: 'Application API',
      version: '1.0.0',
      description:
        'Sessions, accounts and profile pictures, portfolios and asset values for the trading web ' +
        'client. Sign in with /api/authorize/login; the session travels in the `sid` cookie. ' +
        'State-changing requests from browsers must come from an allowed origin, and the upload ' +
        'needs the `csrf-token` cookie value in `X-CSRF-Token`.',
      securitySchemes: apiSecuritySchemes,
    },
  });
  return { ...service, data, timeouts, live, pictureDecoding };
}
