import { z } from 'zod';

// Configuration: logs and traces, which every process has.

export const observabilitySection = z.object({
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
});

export type ObservabilityConfig = z.infer<typeof observabilitySection>;
