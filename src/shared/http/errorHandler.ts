import type { Context, Next } from 'koa';
import {
  BackendTerminatedError,
  BackendTerminatedUnexpectedlyError,
  ConnectionError,
  StatementCancelledError,
  StatementTimeoutError,
} from 'slonik';
import { AppError, OverloadedError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { refuseRestOfBody } from './oversizedBody.ts';

export interface ErrorBody {
  error: { code: string; message: string; details: unknown[] };
}

// Errors thrown by koa-body and other http-errors producers carry a status and `expose`.
interface HttpishError {
  status?: number;
  statusCode?: number;
  expose?: boolean;
  type?: string;
  message?: string;
}

const CODES_BY_STATUS: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  409: 'conflict',
  411: 'length_required',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable',
  429: 'rate_limited',
  501: 'not_implemented',
  503: 'dependency_unavailable',
};

/** Messages of the answers the router gives without a body. */
const NO_BODY_MESSAGES: Record<number, (ctx: Context) => string> = {
  404: (ctx) => `No route for ${ctx.method} ${ctx.path}`,
  405: (ctx) =>
    `${ctx.method} is not allowed on ${ctx.path}; allowed: ${ctx.response.get('Allow')}`,
  501: (ctx) => `Method ${ctx.method} is not implemented`,
};

function isDatabaseUnavailable(error: unknown): boolean {
  if (
    error instanceof ConnectionError ||
    error instanceof BackendTerminatedError ||
    error instanceof BackendTerminatedUnexpectedlyError ||
    error instanceof StatementTimeoutError ||
    // Cancelled by us for an abandoned request, or by an operator (pg_cancel_backend).
    error instanceof StatementCancelledError
  ) {
    return true;
  }
  const code = (error as { code?: string }).code;
  // The raw pg pool once closed (shutdown under way): the database is gone for this process.
  if ((error as Error).message === 'Cannot use a pool after calling end on the pool') return true;
  return (
    code === 'ECONNREFUSED' ||
    code === 'ECONNRESET' ||
    code === '57P01' || // admin_shutdown
    code === '57P03' || // cannot_connect_now
    code === '08006' ||
    code === '08001'
  );
}

/** Maps any error to the contract's JSON error body. The one place errors become HTTP. */
export function toHttpError(error: unknown): {
  status: number;
  body: ErrorBody;
  headers: Record<string, string>;
} {
  if (error instanceof AppError) {
    return {
      status: error.status,
      headers: error.headers,
      body: { error: { code: error.code, message: error.message, details: error.details } },
    };
  }
  if (isDatabaseUnavailable(error)) {
    return {
      status: 503,
      headers: { 'Retry-After': '5' },
      body: {
        error: {
          code: 'dependency_unavailable',
          message: 'The database is unavailable; try again shortly.',
          details: [],
        },
      },
    };
  }
  const httpish = error as HttpishError;
  const status = httpish.status ?? httpish.statusCode;
  if (status && status >= 400 && status < 500) {
    const code =
      httpish.type === 'entity.parse.failed' || /JSON/i.test(httpish.message ?? '')
        ? 'invalid_json'
        : (CODES_BY_STATUS[status] ?? 'bad_request');
    const message = httpish.expose !== false && httpish.message ? httpish.message : 'Bad request';
    return { status, headers: {}, body: { error: { code, message, details: [] } } };
  }
  return {
    status: 500,
    headers: {},
    body: { error: { code: 'internal_error', message: 'Internal server error', details: [] } },
  };
}

export function errorHandler(logger: Logger) {
  return async function handleErrors(ctx: Context, next: Next) {
    try {
      await next();
      // What answered without a body (no route: 404; the router's 405 with Allow, 501 for a
      // method no route knows) still answers in the contract's shape.
      if (ctx.status >= 400 && ctx.body == null) {
        const status = ctx.status;
        ctx.status = status;
        ctx.body = {
          error: {
            code: CODES_BY_STATUS[status] ?? 'bad_request',
            message: NO_BODY_MESSAGES[status]?.(ctx) ?? ctx.message,
            details: [],
          },
        } satisfies ErrorBody;
      }
    } catch (error) {
      const { status, body, headers } = toHttpError(error);
      // A refusal at capacity (ours, counted and timed in shedAnswers.ts, or the data module's
      // passed on) is deliberate back-pressure: under a flood, a stack per refusal would only be
      // a flood of error lines.
      if (status >= 500 && !(error instanceof OverloadedError)) {
        const requestLogger = (ctx.state.logger as Logger | undefined) ?? logger;
        requestLogger.error({ err: error }, 'request failed');
      }
      ctx.status = status;
      ctx.set(headers);
      if (status === 413) refuseRestOfBody(ctx);
      const extra = (ctx.state.errorBodyExtra ?? {}) as Record<string, unknown>;
      ctx.body = { ...extra, ...body };
    }
  };
}
