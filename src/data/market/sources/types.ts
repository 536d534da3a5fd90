import { priceProblem } from '../../../shared/amounts.ts';

/** One request for current prices: which currencies, for which instant, until when. */
export interface PriceRequest {
  /** Currency codes wanted (upper case, as in the currencies table). */
  codes: string[];
  /** The instant the prices stand for (the harvest slot); only the simulated market uses it. */
  at: Date;
  /** Epoch milliseconds after which an answer is useless (the slot would be stale). */
  deadline: number;
  /** Aborts when the deadline passes or the process stops. */
  signal: AbortSignal;
}

/**
 * Anything that can tell current USD prices. A source answers with the codes it could price;
 * codes it does not know are simply absent. It throws (a SourceError) only when it could price
 * nothing at all this time.
 */
export interface PriceSource {
  readonly name: string;
  fetchPrices(request: PriceRequest): Promise<Map<string, number>>;
}

export const SOURCE_FAILURES = [
  'timeout',
  'network',
  'http',
  'rate_limited',
  'cooling_down',
  'malformed',
  'exchange_error',
  'aborted',
] as const;
export type SourceFailure = (typeof SOURCE_FAILURES)[number];

/** Why a source priced nothing this cycle; `reason` labels the fetch-errors metric. */
export class SourceError extends Error {
  readonly source: string;
  readonly reason: SourceFailure;
  constructor(source: string, reason: SourceFailure, message: string, options?: ErrorOptions) {
    super(`${source}: ${message}`, options);
    this.name = 'SourceError';
    this.source = source;
    this.reason = reason;
  }
}

/** A price as exchanges send it (a decimal string or number): positive and within MAX_PRICE, else null. */
export function positivePrice(value: unknown): number | null {
  const price = typeof value === 'string' ? Number(value) : value;
  return typeof price === 'number' && priceProblem(price) === null ? price : null;
}

/** What every exchange adapter is configured with. */
export interface HttpSourceOptions {
  baseUrl: string;
  /** Time-out of one attempt, in milliseconds. */
  timeoutMs: number;
  retries?: number;
}
