import { randomUUID } from 'node:crypto';
import { trace } from '@opentelemetry/api';
import type { Context, Next } from 'koa';
import type { Logger } from '../logger.ts';
import { httpActiveRequests, httpRequestDuration } from '../metrics.ts';
import { isShedAnswer } from './shedAnswers.ts';

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
const OPERATIONAL_PATH = /^\/(metrics|health\/(live|ready)|actuator\/health)$/;

/** The caller's X-Request-Id when it is sane, else a new one. */
export function requestIdOf(ctx: Context): string {
  return requestIdFrom(ctx.get('x-request-id'));
}

/** The X-Request-Id header's value when it is sane, else a new id. */
export function requestIdFrom(incoming: string | string[] | undefined): string {
  return typeof incoming === 'string' && REQUEST_ID_PATTERN.test(incoming)
    ? incoming
    : randomUUID();
}

/**
 * Gives every request an id (the caller's X-Request-Id when it is sane), a child logger carrying
 * it, an access log line and a latency observation labelled with the route template.
 */
export function requestContext(service: string, logger: Logger) {
  return async function trackRequest(ctx: Context, next: Next) {
    const requestId = requestIdOf(ctx);
    ctx.set('X-Request-Id', requestId);
    ctx.state.requestId = requestId;
    trace.getActiveSpan()?.setAttribute('http.request.id', requestId);
    ctx.state.logger = logger.child({ requestId });
    const started = process.hrtime.bigint();
    httpActiveRequests.inc({ service });
    try {
      await next();
    } finally {
      httpActiveRequests.dec({ service });
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = (ctx as Context & { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      httpRequestDuration.observe(
        { service, method: ctx.method, route: String(route), status_code: String(ctx.status) },
        seconds,
      );
      // Probes and scrapes arrive every few seconds; they only matter when they fail. A shed
      // answer (503 at capacity) is back-pressure, not a failure: logged as a 4xx is.
      const level =
        ctx.status >= 500 && !isShedAnswer(ctx.res)
          ? 'error'
          : OPERATIONAL_PATH.test(ctx.path) && ctx.status < 400
            ? 'debug'
            : 'info';
      (ctx.state.logger as Logger)[level](
        {
          method: ctx.method,
          path: ctx.path,
          route,
          status: ctx.status,
          durationMs: Math.round(seconds * 1e4) / 10,
        },
        'request',
      );
    }
  };
}
