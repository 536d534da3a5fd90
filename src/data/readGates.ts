import type { Config } from '../shared/config.ts';
import { routeGate, type RouteGate } from '../shared/http/admission.ts';

/**
 * The concurrency limits of the data module's expensive reads, each with its short queue: past
 * them a request is answered 503 with Retry-After instead of waiting for the read pool.
 */
export interface ReadGates {
  history: RouteGate;
  candles: RouteGate;
  export: RouteGate;
}

export function readGates(config: Config): ReadGates {
  const queue = {
    queueLength: config.ADMISSION_QUEUE_LENGTH,
    maxWaitMs: config.ADMISSION_QUEUE_WAIT_MS,
  };
  return {
    history: routeGate('history', { limit: config.HISTORY_MAX_CONCURRENT, ...queue }),
    candles: routeGate('candle', { limit: config.CANDLES_MAX_CONCURRENT, ...queue }),
    export: routeGate('export', { limit: config.EXPORT_MAX_CONCURRENT, ...queue }),
  };
}
