import { register } from 'node:module';

// OpenTelemetry tracing, started before anything else is imported (bin/platform.mjs calls
// startTelemetry() first; `node --import ./src/shared/telemetry.ts` works too). Only when
// OTEL_EXPORTER_OTLP_ENDPOINT is set: otherwise neither the SDK nor the module hook is loaded and
// the @opentelemetry/api calls in the code (job spans, log trace ids) are no-ops.
//
// Spans: HTTP server and client (named "GET /route/:template" thanks to the Koa instrumentation),
// every PostgreSQL query (pg, under Slonik and graphile-worker), and one span per job (see
// src/worker/instrumentation.ts). Everything is sampled; metrics stay with Prometheus.

interface Sdk {
  shutdown(): Promise<void>;
}

let sdk: Sdk | undefined;

/** Starts tracing when configured; returns whether it did. Bad configuration is left to the CLI. */
export async function startTelemetry(
  env: Record<string, string | undefined> = process.env,
): Promise<boolean> {
  if (sdk) return true;
  // Unset (or empty, which the configuration reads as unset): no tracing, and no configuration
  // schema loaded before the command needs it (a `--help` never does).
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT) return false;
  const { ConfigError, loadConfig } = await import('./config.ts');
  let endpoint: string | undefined;
  let serviceName: string;
  try {
    const config = loadConfig(env);
    endpoint = config.OTEL_EXPORTER_OTLP_ENDPOINT;
    serviceName = config.OTEL_SERVICE_NAME;
  } catch (error) {
    if (error instanceof ConfigError) return false; // the command reports it with exit code 2
    throw error;
  }
  if (!endpoint) return false;

  // ESM modules (koa, @koa/router, pg through its ESM entry) are patched only through this hook,
  // which must be in place before they are first imported.
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
  const [
    { NodeSDK },
    { OTLPTraceExporter },
    { AlwaysOnSampler },
    { HttpInstrumentation },
    { KoaInstrumentation, KoaLayerType },
    { PgInstrumentation },
  ] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-koa'),
    import('@opentelemetry/instrumentation-pg'),
  ]);
  const started = new NodeSDK({
    serviceName,
    traceExporter: new OTLPTraceExporter({ url: tracesUrl(endpoint) }),
    sampler: new AlwaysOnSampler(),
    // Metrics are Prometheus's job and logs go to stdout: the SDK exports traces only.
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({
        // Probes and scrapes every few seconds would drown the traces that matter.
        ignoreIncomingRequestHook: (request) => isOperationalPath(request.url ?? ''),
      }),
      // Router layers name the route; one span per middleware would only add noise.
      new KoaInstrumentation({ ignoreLayersType: [KoaLayerType.MIDDLEWARE] }),
      new PgInstrumentation({ requireParentSpan: true }),
    ],
  });
  started.start();
  sdk = started;
  // Short commands (migrate, doctor) end when the event loop empties: flush their spans then.
  // Long-running roles call shutdownTelemetry() from their signal handler.
  process.once('beforeExit', () => void shutdownTelemetry());
  return true;
}

/** Flushes spans still buffered and stops exporting; a no-op without tracing. */
export async function shutdownTelemetry(): Promise<void> {
  const running = sdk;
  sdk = undefined;
  await running?.shutdown().catch(() => {});
}

/** The OTLP/HTTP traces URL of a base endpoint, as the OTLP exporter specification builds it. */
export function tracesUrl(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, '')}/v1/traces`;
}

function isOperationalPath(url: string): boolean {
  return /^\/(metrics|health\/|actuator\/health)/.test(url);
}
