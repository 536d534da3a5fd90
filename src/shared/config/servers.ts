import { z } from 'zod';
import { port, positiveInt } from './fields.ts';

// Configuration: the processes' HTTP listeners and how they shut down.

export const serversSection = z.object({
  HOST: z
    .string()
    .min(1)
    .default('127.0.0.1')
    .describe('Address the HTTP servers bind to (use 0.0.0.0 in containers).'),
  DATA_PORT: port.default(8085).describe('Port of the data module.'),
  API_PORT: port.default(8080).describe('Port of the application API.'),
  WORKER_METRICS_PORT: port
    .default(9464)
    .describe(
      'Port of the ops listener (health and /metrics) of a process without the data role: a ' +
        'worker, or an API (the public API port serves no /metrics). With the data role, /metrics ' +
        'is on DATA_PORT.',
    ),
  REQUEST_TIMEOUT_MS: positiveInt
    .default(60_000)
    .describe(
      'Longest time an HTTP request may take before it is answered 503 (a dependency hanging).',
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
