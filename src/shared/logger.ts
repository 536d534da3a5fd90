import { isSpanContextValid, trace } from '@opentelemetry/api';
import { pino, type Logger } from 'pino';
import { PinoPretty } from 'pino-pretty';

// Secrets never reach the logs: these paths are censored wherever they appear.
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-csrf-token"]',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  '*.password',
  '*.token',
  '*.secret',
  '*.sessionId',
  'password',
  'token',
  'secret',
  'connectionString',
  '*.connectionString',
];

export type { Logger };

/** JSON lines for machines; readable lines when a person watches a terminal. */
function defaultDestination(format: 'json' | 'pretty' | 'auto') {
  const pretty = format === 'pretty' || (format === 'auto' && process.stdout.isTTY);
  return pretty
    ? PinoPretty({ colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid' })
    : undefined;
}

export function createLogger(
  level: string,
  destination?: NodeJS.WritableStream | { write(msg: string): void },
  format: 'json' | 'pretty' | 'auto' = 'auto',
): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      mixin: traceContext,
    },
    (destination as NodeJS.WritableStream | undefined) ?? defaultDestination(format),
  );
}

/** A connection string with its password masked, for log lines and doctor output. */
export function redactDsn(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '[unparseable connection string]';
  }
}

/**
 * The active span's ids on every line logged inside a traced request or job, so a log line leads
 * to its trace. Without tracing (no OTEL_EXPORTER_OTLP_ENDPOINT) there is never an active span.
 */
function traceContext(): Record<string, string> {
  const context = trace.getActiveSpan()?.spanContext();
  if (!context || !isSpanContextValid(context)) return {};
  return { trace_id: context.traceId, span_id: context.spanId };
}
