import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet from 'helmet';
import { retryAfterValue } from '../errors.ts';
import { httpRequestDuration } from '../metrics.ts';
import { requestIdFrom } from './requestContext.ts';
import { refusalBody, routeFor, type EarlyRefusalRoute } from './shedEarly.ts';
import { shedAnswers } from './shedAnswers.ts';

// Refusing a client already over a route's rate limit at the top of the Koa stack (shedEarly.ts)
// still builds a Koa context, runs the security-header middleware (a dozen setHeader calls),
// composes the middleware and lets Koa write the answer: most of what one refusal costs besides
// the kernel's send, paid ~4,000 times a second by a client that fires again at once after each
// 429, on the event loop that also runs sign-in and the snapshots. Here the HTTP server's request
// listener answers such a request itself, with headers prepared once, before Koa sees it. Only
// requests that need nothing of Koa to be judged and answered are taken: no cookies (a session
// could make them a signed-in user's, judged by another limit) and no Origin (a page on an
// allowed origin must get its CORS headers, from the CORS middleware). Everything else, and any
// request this cannot judge, goes on to Koa, whose early refusal gives the same answer.

/** Answers some requests before Koa; calls `next` (Koa) for every request it does not answer. */
export type BeforeKoa = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;

export interface BeforeKoaOptions {
  /** The service name the request histogram is labelled with. */
  service: string;
  /** The client's address, as Koa's `ctx.ip` would be (the trusted-proxy rules applied). */
  clientAddress: (req: IncomingMessage) => string;
  /**
   * Headers the service's own middleware gives a request without Origin besides the security
   * headers (the CORS middleware's `Vary: Origin`), as name, value pairs.
   */
  extraHeaders?: ReadonlyArray<readonly [string, string]>;
}

/** The security headers of the stack's helmet middleware, as one request gets them. */
function securityHeaders(): string[] {
  const headers: string[] = [];
  const recorder = {
    setHeader: (name: string, value: string) => headers.push(name, value),
    removeHeader: () => {},
  };
  // Helmet's middleware is synchronous and its default headers do not depend on the request.
  helmet()({} as IncomingMessage, recorder as unknown as ServerResponse, () => {});
  return headers;
}

export function refuseBeforeKoa(routes: EarlyRefusalRoute[], options: BeforeKoaOptions): BeforeKoa {
  const common = [
    ...securityHeaders(),
    ...(options.extraHeaders ?? []).flat(),
    'Content-Type',
    'application/json; charset=utf-8',
  ];
  const prepared = routes
    .filter((route) => route.refusal.cookielessKey !== undefined)
    .map((route) => {
      const body = refusalBody(route);
      const histograms = new Map<string, ReturnType<typeof httpRequestDuration.labels>>();
      const duration = (method: string) => {
        let histogram = histograms.get(method);
        if (!histogram) {
          histogram = httpRequestDuration.labels({
            service: options.service,
            method,
            route: route.route,
            status_code: '429',
          });
          histograms.set(method, histogram);
        }
        return histogram;
      };
      return {
        ...route,
        body,
        headers: [...common, 'Content-Length', String(body.length)],
        shed: shedAnswers(route.refusal.limit.group, 'rate_limited'),
        duration,
      };
    });
  return function refuseOverLimitBeforeKoa(req, res, next) {
    const started = process.hrtime.bigint();
    if (prepared.length === 0 || req.headers.cookie !== undefined || req.headers.origin) {
      next();
      return;
    }
    const url = req.url ?? '';
    const query = url.indexOf('?');
    const route = routeFor(prepared, req.method, query === -1 ? url : url.slice(0, query));
    const key = route?.refusal.cookielessKey!(options.clientAddress(req));
    if (key === undefined) {
      next();
      return;
    }
    route!.refusal.limit.msUntilAllowed(key).then(
      (waitMs) => {
        if (waitMs === undefined) {
          next();
          return;
        }
        route!.shed(req, res);
        res.writeHead(429, [
          ...route!.headers,
          'Retry-After',
          retryAfterValue(waitMs / 1000),
          'X-Request-Id',
          requestIdFrom(req.headers['x-request-id']),
        ]);
        res.end(route!.body);
        route!.duration(req.method!).observe(Number(process.hrtime.bigint() - started) / 1e9);
      },
      // Whatever failed here, the full stack judges the request (and maps any error).
      () => next(),
    );
  };
}
