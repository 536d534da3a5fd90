import Router from '@koa/router';
import Koa from 'koa';
import { koaBody } from 'koa-body';
import helmet from 'koa-helmet';
import type { Logger } from '../logger.ts';
import { mountMetricsRoute } from '../metrics.ts';
import {
  clientAddress,
  requestClientAddress,
  trustsProxies,
  type ProxyTrust,
} from './clientAddress.ts';
import { errorHandler } from './errorHandler.ts';
import { mountHealthRoutes, Readiness } from './health.ts';
import { buildOpenApiDocument, mountDocsRoutes, type OpenApiInfo } from './openapi.ts';
import { requestAbort } from './requestAbort.ts';
import { requestContext } from './requestContext.ts';
import { requestDeadline } from './requestDeadline.ts';
import type { RouteRegistry } from './routes.ts';
import { refuseBeforeKoa } from './refuseBeforeKoa.ts';
import { answerBeforeKoa } from './server.ts';
import { shedEarly } from './shedEarly.ts';

export interface HttpServiceOptions {
  name: string;
  logger: Logger;
  routes: RouteRegistry;
  openApi: OpenApiInfo;
  readiness?: Readiness;
  /** Largest JSON/text body accepted, e.g. '1mb'. */
  jsonLimit?: string;
  /**
   * Middleware placed after the common stack and before the routes (sessions, CSRF, …); a
   * function receives the app first, for middleware that must configure it (koa-session).
   */
  middleware?: Koa.Middleware[] | ((app: Koa) => Koa.Middleware[]);
  /**
   * Middleware a request refused early (see shedEarly.ts) passes through before its 429: what a
   * refusal must carry from the service's own middleware (CORS headers).
   */
  earlyRefusalMiddleware?: Koa.Middleware[];
  /**
   * What that middleware adds to a request without Origin or cookies, refused before Koa (see
   * refuseBeforeKoa.ts): e.g. the CORS middleware's `Vary: Origin`.
   */
  earlyRefusalHeaders?: ReadonlyArray<readonly [string, string]>;
  /** Extra routes mounted beside the declared ones (static assets, …). */
  extend?: (router: Router) => void;
  /** A request not finished within this answers 503 (a dependency hanging). */
  requestTimeoutMs?: number;
  /**
   * Serve /metrics here (default true). The API's port is public: its process serves metrics on
   * the ops listener instead (src/shared/http/opsServer.ts).
   */
  metrics?: boolean;
  /** Trusted reverse proxies: a hop count or CIDRs (0 or none: X-Forwarded-* ignored). */
  trustProxy?: ProxyTrust;
}

/**
 * The Koa stack every service shares: security headers, early refusal of clients over a route's
 * rate limit, request ids and access logs, one error mapper, body parsing with limits, health, metrics, OpenAPI and docs, then the service's routes.
 */
export function createHttpService(options: HttpServiceOptions) {
  const trust = options.trustProxy ?? 0;
  const behindProxies = trustsProxies(trust);
  const app = new Koa({ proxy: behindProxies });
  const readiness = options.readiness ?? new Readiness();
  const router = new Router();

  if (behindProxies) app.use(clientAddress(trust));
  app.use(helmet());
  // A client already over a route's rate limit is refused here, before the rest of the stack.
  const earlyRefusals = options.routes.earlyRefusals();
  if (earlyRefusals.length > 0) {
    // The cheapest refusals, for requests that need nothing of Koa, before Koa sees them.
    answerBeforeKoa(
      app,
      refuseBeforeKoa(earlyRefusals, {
        service: options.name,
        clientAddress: requestClientAddress(trust),
        extraHeaders: options.earlyRefusalHeaders,
      }),
    );
    app.use(shedEarly(options.name, earlyRefusals, options.earlyRefusalMiddleware));
  }
  app.use(requestContext(options.name, options.logger));
  app.use(errorHandler(options.logger));
  app.use(requestAbort());
  if (options.requestTimeoutMs) app.use(requestDeadline(options.requestTimeoutMs));
  const parseBody = koaBody({
    json: true,
    text: true,
    urlencoded: false,
    multipart: false,
    jsonLimit: options.jsonLimit ?? '1mb',
    textLimit: options.jsonLimit ?? '1mb',
    jsonStrict: false,
    onError: (error) => {
      throw error;
    },
  });
  const middleware =
    typeof options.middleware === 'function' ? options.middleware(app) : options.middleware;
  for (const each of middleware ?? []) app.use(each);
  // Bodies are read after the service's middleware (sessions, cross-site defence): a request
  // refused there is refused before its body is read, and body errors see the session.
  app.use(async (ctx, next) => {
    if (options.routes.takesRawBody(ctx.method, ctx.path)) {
      await next();
      return;
    }
    let routed = false;
    try {
      await parseBody(ctx, () => {
        routed = true;
        return next();
      });
    } catch (error) {
      // Refused before routing: the request is still counted under the route it was for.
      const route = routed ? undefined : options.routes.routeOf(ctx.method, ctx.path);
      if (route) (ctx as { _matchedRoute?: string })._matchedRoute = route;
      throw error;
    }
  });

  mountHealthRoutes(router, readiness);
  if (options.metrics ?? true) mountMetricsRoute(router);
  mountDocsRoutes(router, options.routes, options.openApi);
  options.extend?.(router);
  options.routes.mount(router);
  app.use(router.routes());
  app.use(router.allowedMethods({ throw: false }));

  app.on('error', (error: unknown) => {
    options.logger.debug({ err: error }, 'koa error event');
  });

  return {
    app,
    router,
    readiness,
    /** The service's OpenAPI document, as /openapi.json serves it. */
    openApiDocument: () => buildOpenApiDocument(options.routes, options.openApi),
  };
}
