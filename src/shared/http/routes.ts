import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import type {
  ZodOpenApiHeadersObject,
  ZodOpenApiOperationObject,
  ZodOpenApiPathsObject,
  ZodOpenApiResponseObject,
} from 'zod-openapi';
import { runAbandonable } from '../abandonment.ts';
import { requestSignal } from './requestAbort.ts';
import type { EarlyRefusal, EarlyRefusalRoute } from './shedEarly.ts';
import { UnsupportedMediaTypeError, ValidationError, type ErrorDetail } from '../errors.ts';

// A route is declared once: its zod schemas validate requests at run time and describe the route
// in /openapi.json, so the documentation cannot drift from what the code accepts.

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** A response header: what it carries, and whether every such response sends it. */
export interface HeaderSpec {
  description: string;
  required?: boolean;
}

export interface ResponseSpec {
  description: string;
  schema?: z.ZodType;
  /** Media type(s) of the body, each with `schema`; JSON unless said otherwise. */
  contentType?: string | string[];
  headers?: Record<string, HeaderSpec>;
}

type AnyObject = z.ZodType<Record<string, unknown>>;

type HeaderObject = z.ZodObject<Record<string, z.ZodType<string | undefined>>>;

export interface RouteSpec<
  P extends AnyObject = AnyObject,
  Q extends AnyObject = AnyObject,
  B extends z.ZodType = z.ZodType,
  H extends HeaderObject = HeaderObject,
> {
  method: HttpMethod;
  /** OpenAPI form, e.g. `/data/currency/history/{code}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  params?: P;
  query?: Q;
  /** Request headers the route reads, keyed by their canonical spelling (`Idempotency-Key`). */
  headers?: H;
  body?: B;
  /** Media types accepted for the body; JSON unless said otherwise. */
  bodyTypes?: string[];
  /**
   * The handler reads the request stream itself (bulk routes with their own limits and formats):
   * the shared body parser skips the route and `body` only documents it.
   */
  rawBody?: boolean;
  responses: Record<number, ResponseSpec>;
  /** Error statuses this route can answer with (each documented with the error body). */
  errors?: number[];
  /** The body of this route's errors when it adds to the common one (identity: `authorized`). */
  errorBody?: z.ZodType;
  /** Credentials the route needs; none (a public route) unless given. */
  security?: Array<Record<string, string[]>>;
  /**
   * The route's rate limit read at the top of the stack: a client already over it is refused
   * there, before sessions, bodies and routing (see shared/http/shedEarly.ts).
   */
  shedEarly?: EarlyRefusal;
  /** Middleware run before validation (authentication, rate limits). */
  before?: Array<(ctx: Context, next: () => Promise<unknown>) => Promise<unknown>>;
  /**
   * Reads only: when the client leaves or the deadline passes, the handler's running SQL is
   * cancelled and its data-module calls aborted (see shared/abandonment.ts).
   */
  cancelWhenAbandoned?: boolean;
  handler: (
    ctx: Context,
    input: { params: z.output<P>; query: z.output<Q>; body: z.output<B>; headers: z.output<H> },
  ) => Promise<void> | void;
}

export const errorBodySchema = z
  .object({
    error: z.object({
      code: z.string().meta({ example: 'validation_error' }),
      message: z.string(),
      details: z.array(z.unknown()),
    }),
  })
  .meta({ id: 'Error', description: 'Every error of the platform has this shape.' });

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid input: the details name the field and the reason.',
  401: 'Missing or invalid credentials.',
  403: 'The credentials do not allow this.',
  404: 'Unknown resource.',
  409: 'Conflict with existing data.',
  413: 'Request too large.',
  415: 'Unsupported media type.',
  422: 'Well-formed, but refers to something that does not exist.',
  429: 'Rate-limited; see Retry-After.',
  503: 'A dependency (database, data module) is unavailable, or the server is too busy for this now (see Retry-After).',
};

/** Headers the error mapper sends with some statuses (src/shared/errors.ts, errorHandler.ts). */
const ERROR_HEADERS: Record<number, Record<string, HeaderSpec>> = {
  429: {
    'Retry-After': { description: 'Seconds to wait before trying again.', required: true },
  },
  503: {
    'Retry-After': {
      description:
        'Seconds to wait before trying again, when the answer is expected to change soon (a database back, load shed).',
    },
  },
};

export interface RouteRegistryOptions {
  /** Headers this service adds to error responses, by status (e.g. a 401's challenge). */
  errorHeaders?: Record<number, Record<string, HeaderSpec>>;
}

function headersObject(headers: Record<string, HeaderSpec>): ZodOpenApiHeadersObject {
  return Object.fromEntries(
    Object.entries(headers).map(([name, header]) => [
      name,
      {
        description: header.description,
        required: header.required ?? false,
        schema: { type: 'string' },
      },
    ]),
  );
}

function responseObject(
  description: string,
  content: Record<string, z.ZodType> | undefined,
  headers: Record<string, HeaderSpec>,
): ZodOpenApiResponseObject {
  return {
    description,
    ...(content
      ? {
          content: Object.fromEntries(
            Object.entries(content).map(([type, schema]) => [type, { schema }]),
          ),
        }
      : {}),
    ...(Object.keys(headers).length > 0 ? { headers: headersObject(headers) } : {}),
  };
}

export function defineRoute<
  P extends AnyObject,
  Q extends AnyObject,
  B extends z.ZodType,
  H extends HeaderObject = HeaderObject,
>(spec: RouteSpec<P, Q, B, H>): RouteSpec<P, Q, B, H> {
  return spec;
}

export function issuesToDetails(location: string, error: z.ZodError): ErrorDetail[] {
  return error.issues.map((issue) => ({
    path: [location, ...issue.path.map(String)].join('.'),
    message: issue.message,
  }));
}

const LOCATION_NOUNS: Record<string, string> = {
  query: 'query parameter',
  params: 'path parameter',
  headers: 'header',
};

export function describeFirst(location: string, details: ErrorDetail[]): string {
  const first = details[0];
  if (!first) return `Invalid ${location}`;
  const name = first.path?.split('.').slice(1).join('.') || location;
  const noun = LOCATION_NOUNS[location] ?? 'field';
  return `Invalid ${noun} '${name}': ${first.message}`;
}

function parsePart<T extends z.ZodType>(location: string, schema: T, value: unknown): z.output<T> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const details = issuesToDetails(location, parsed.error);
    throw new ValidationError(describeFirst(location, details), details);
  }
  return parsed.data;
}

function requireMediaType(ctx: Context, accepted: string[]) {
  if (!ctx.request.is(accepted)) {
    throw new UnsupportedMediaTypeError(
      `Content-Type must be one of ${accepted.join(', ')}; got ${ctx.get('content-type') || 'none'}`,
    );
  }
}

/** The declared headers by their canonical names; absent ones are undefined. */
function readHeaders(ctx: Context, schema: HeaderObject): Record<string, string | undefined> {
  return Object.fromEntries(
    Object.keys(schema.shape).map((name) => [name, ctx.get(name) || undefined]),
  );
}

/** A regular expression source matching an OpenAPI path, each `{param}` one path segment. */
function pathPattern(openApiPath: string): string {
  return openApiPath
    .split(/\{[^}]+\}/)
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/]+');
}

function toRouterPath(openApiPath: string): string {
  return openApiPath.replace(/\{([^}]+)\}/g, ':$1');
}

/** Collects route specs for one service, mounts them on a router and renders their OpenAPI paths. */
export class RouteRegistry {
  readonly routes: RouteSpec[] = [];

  private readonly options: RouteRegistryOptions;

  constructor(options: RouteRegistryOptions = {}) {
    this.options = options;
  }

  private readonly rawBodyRoutes: Array<{ method: string; pattern: RegExp }> = [];

  add<P extends AnyObject, Q extends AnyObject, B extends z.ZodType, H extends HeaderObject>(
    spec: RouteSpec<P, Q, B, H>,
  ) {
    this.routes.push(spec);
    if (spec.rawBody) {
      this.rawBodyRoutes.push({
        method: spec.method.toUpperCase(),
        pattern: new RegExp(`^${pathPattern(spec.path)}/?$`),
      });
    }
    return this;
  }

  /** The routes refusing early, each with the pattern the router matches it by. */
  earlyRefusals(): EarlyRefusalRoute[] {
    return this.routes.flatMap((spec) =>
      spec.shedEarly
        ? [
            {
              method: spec.method.toUpperCase(),
              // As the router matches: any letter case, an optional trailing slash.
              pattern: new RegExp(`^${pathPattern(spec.path)}/?$`, 'i'),
              route: toRouterPath(spec.path),
              refusal: spec.shedEarly,
            },
          ]
        : [],
    );
  }

  /**
   * The router's name of the route a request goes to (`/data/currency/history/:code`), for a
   * request refused before the router runs (a body that does not parse), so that its metrics
   * and log line name the route all the same.
   */
  routeOf(method: string, path: string): string | undefined {
    const spec = this.routes.find(
      (r) =>
        r.method.toUpperCase() === method &&
        new RegExp(`^${pathPattern(r.path)}/?$`, 'i').test(path),
    );
    return spec && toRouterPath(spec.path);
  }

  /** Whether the request goes to a route that reads its body stream itself. */
  takesRawBody(method: string, path: string): boolean {
    return this.rawBodyRoutes.some((r) => r.method === method && r.pattern.test(path));
  }

  mount(router: Router) {
    for (const spec of this.routes) {
      const validateAndHandle = async (ctx: Context) => {
        const params = spec.params ? parsePart('params', spec.params, ctx.params) : {};
        const query = spec.query ? parsePart('query', spec.query, ctx.query) : {};
        const headers = spec.headers
          ? parsePart('headers', spec.headers, readHeaders(ctx, spec.headers))
          : {};
        let body: unknown = undefined;
        if (spec.body) {
          requireMediaType(ctx, spec.bodyTypes ?? ['application/json']);
          if (!spec.rawBody) body = parsePart('body', spec.body, ctx.request.body);
        }
        const handle = () => spec.handler(ctx, { params, query, body, headers });
        await (spec.cancelWhenAbandoned ? runAbandonable(requestSignal(ctx), handle) : handle());
      };
      router[spec.method](
        spec.operationId,
        toRouterPath(spec.path),
        ...(spec.before ?? []),
        validateAndHandle,
      );
    }
  }

  openApiPaths(): ZodOpenApiPathsObject {
    const paths: ZodOpenApiPathsObject = {};
    for (const spec of this.routes) {
      const responses: Record<string, ZodOpenApiResponseObject> = {};
      for (const [status, response] of Object.entries(spec.responses)) {
        const types = [response.contentType ?? 'application/json'].flat();
        responses[status] = responseObject(
          response.description,
          response.schema
            ? Object.fromEntries(types.map((type) => [type, response.schema!]))
            : undefined,
          response.headers ?? {},
        );
      }
      for (const status of new Set([
        ...(spec.body || spec.query || spec.params ? [400] : []),
        // The shared body parser's answers: over its size limit, or not the route's media type.
        ...(spec.body ? [413, 415] : []),
        ...(spec.errors ?? []),
      ])) {
        responses[String(status)] ??= responseObject(
          ERROR_DESCRIPTIONS[status] ?? 'Error',
          { 'application/json': spec.errorBody ?? errorBodySchema },
          { ...ERROR_HEADERS[status], ...this.options.errorHeaders?.[status] },
        );
      }
      const operation: ZodOpenApiOperationObject = {
        operationId: spec.operationId,
        summary: spec.summary,
        ...(spec.description ? { description: spec.description } : {}),
        tags: spec.tags,
        // An empty list says so explicitly: no credentials, whatever a document default says.
        security: spec.security ?? [],
        requestParams: {
          ...(spec.params ? { path: spec.params as never } : {}),
          ...(spec.query ? { query: spec.query as never } : {}),
          ...(spec.headers ? { header: spec.headers } : {}),
        },
        ...(spec.body
          ? {
              requestBody: {
                required: true,
                content: Object.fromEntries(
                  (spec.bodyTypes ?? ['application/json']).map((type) => [
                    type,
                    { schema: spec.body },
                  ]),
                ),
              },
            }
          : {}),
        responses: responses,
      };
      paths[spec.path] = { ...(paths[spec.path] ?? {}), [spec.method]: operation };
    }
    return paths;
  }
}
