import { setTimeout as sleep } from 'node:timers/promises';
import ky, { isForceRetryError, isHTTPError, isNetworkError, isTimeoutError } from 'ky';
import { SourceError } from './sources/types.ts';

const USER_AGENT = 'market-data-platform/0.1 (price harvester)';
// Binance answers 418 once an IP has ignored its 429s; both mean "stop for Retry-After seconds".
const RATE_LIMIT_STATUSES = new Set([418, 429]);

export interface ExchangeClientOptions {
  /** Source name, for errors and metrics. */
  source: string;
  /** Time-out of one attempt, in milliseconds. */
  timeoutMs: number;
  /** Retries after the first attempt (time-outs, network errors, 5xx, 429 that fit the deadline). */
  retries?: number;
  /** Least time between two calls, so the harvester stays inside the exchange's public limits. */
  minSpacingMs?: number;
  /** Rest after a rate-limit answer that gives no Retry-After. */
  defaultCooldownMs?: number;
  /** Longest rest a Retry-After may impose (a bad header must not silence a source for days). */
  maxCooldownMs?: number;
  /** Rest after the first of consecutive failed calls; it doubles with each further failure. */
  failureBackoffMs?: number;
  /** Longest rest after consecutive failures. */
  maxFailureBackoffMs?: number;
  /** Recognises bodies that report a passing failure with status 200 (Kraken does that). */
  isTransient?: (body: unknown) => boolean;
}

export interface CallOptions {
  signal: AbortSignal;
  /** Epoch milliseconds after which the answer is useless: no attempt or retry starts past it. */
  deadline: number;
}

/**
 * One exchange's HTTP access: JSON over GET with a time-out per attempt, retries with exponential
 * back-off and full jitter, Retry-After honoured when it fits before the deadline, and a rest
 * after a rate-limit answer during which calls fail at once without reaching the exchange.
 */
export class ExchangeClient {
  readonly #options: Required<Omit<ExchangeClientOptions, 'isTransient'>> &
    Pick<ExchangeClientOptions, 'isTransient'>;
  #restUntil = 0;
  #restReason = '';
  #nextCallAt = 0;
  #consecutiveFailures = 0;

  constructor(options: ExchangeClientOptions) {
    this.#options = {
      retries: 2,
      minSpacingMs: 0,
      defaultCooldownMs: 30_000,
      maxCooldownMs: 600_000,
      failureBackoffMs: 1_000,
      maxFailureBackoffMs: 60_000,
      ...options,
    };
  }

  /** Until when the exchange asked us to stay away (epoch ms; 0 when it did not). */
  get restingUntil(): number {
    return this.#restUntil > Date.now() ? this.#restUntil : 0;
  }

  /** Stays away for `ms`: for exchanges that report rate limits in the body of a 200. */
  restFor(ms: number, reason = 'rate-limited by the exchange') {
    this.#rest(Math.min(ms, this.#options.maxCooldownMs), reason);
  }

  succeeded() {
    this.#consecutiveFailures = 0;
  }

  /**
   * A call (or its answer) failed: rest a while, doubling with each consecutive failure, so a
   * dead or hanging exchange costs the cycles little while it recovers (a circuit breaker).
   */
  failed() {
    this.#consecutiveFailures += 1;
    const { failureBackoffMs, maxFailureBackoffMs } = this.#options;
    const backoff = failureBackoffMs * 2 ** Math.min(this.#consecutiveFailures - 1, 16);
    this.#rest(Math.min(backoff, maxFailureBackoffMs), 'failing; backing off');
  }

  #rest(ms: number, reason: string) {
    const until = Date.now() + ms;
    if (until > this.#restUntil) {
      this.#restUntil = until;
      this.#restReason = reason;
    }
  }

  /**
   * GETs `url` and hands the JSON body to `read`, which turns it into the caller's result or
   * throws a SourceError. Failures (of the call or of `read`) start or extend the back-off;
   * a successful read ends it.
   */
  async getJson<T>(
    url: string | URL,
    { signal, deadline }: CallOptions,
    read: (body: unknown) => T,
  ): Promise<T> {
    const body = await this.#fetchJson(url, signal, deadline);
    try {
      const result = read(body);
      this.succeeded();
      return result;
    } catch (error) {
      if (!(error instanceof SourceError && error.reason === 'rate_limited')) this.failed();
      throw error;
    }
  }

  async #fetchJson(url: string | URL, signal: AbortSignal, deadline: number): Promise<unknown> {
    const { source } = this.#options;
    await this.#awaitTurn(deadline, signal);
    const budget = deadline - Date.now();
    if (budget <= 0) throw new SourceError(source, 'timeout', 'no time left before the deadline');
    let text: string;
    try {
      text = await ky
        .get(url, {
          signal,
          timeout: Math.min(this.#options.timeoutMs, budget),
          totalTimeout: budget,
          headers: { accept: 'application/json', 'user-agent': USER_AGENT },
          retry: {
            limit: this.#options.retries,
            retryOnTimeout: true,
            jitter: true,
            delay: (attempt) => 200 * 2 ** (attempt - 1),
            backoffLimit: 2_000,
            maxRetryAfter: budget,
            shouldRetry: ({ error }) => this.#worthRetrying(error, deadline),
          },
          hooks: { afterResponse: [(state) => this.#retryTransientBody(state.response)] },
        })
        .text();
    } catch (error) {
      const failure = this.#classify(error, signal, deadline);
      if (failure.reason !== 'rate_limited' && failure.reason !== 'aborted') this.failed();
      throw failure;
    }
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      this.failed();
      throw new SourceError(source, 'malformed', 'the answer is not JSON', { cause: error });
    }
  }

  async #awaitTurn(deadline: number, signal: AbortSignal) {
    const { source, minSpacingMs } = this.#options;
    const now = Date.now();
    if (now < this.#restUntil) {
      throw new SourceError(
        source,
        'cooling_down',
        `${this.#restReason}; resting until ${new Date(this.#restUntil).toISOString()}`,
      );
    }
    const wait = this.#nextCallAt - now;
    if (wait > 0) {
      if (now + wait >= deadline) {
        throw new SourceError(
          source,
          'cooling_down',
          'called again sooner than its spacing allows',
        );
      }
      await sleep(wait, undefined, { signal });
    }
    this.#nextCallAt = Date.now() + minSpacingMs;
  }

  /** A rate-limit answer is retried only when its Retry-After ends before the deadline. */
  #worthRetrying(error: Error, deadline: number): boolean | undefined {
    if (!isHTTPError(error) || !RATE_LIMIT_STATUSES.has(error.response.status)) return undefined;
    if (error.response.status === 418) return false;
    const after = retryAfterMs(error.response.headers);
    if (after === undefined) return undefined;
    return Date.now() + after < deadline ? undefined : false;
  }

  async #retryTransientBody(response: Response) {
    if (!this.#options.isTransient || !response.ok) return;
    const body: unknown = await response
      .clone()
      .json()
      .catch(() => undefined);
    if (body !== undefined && this.#options.isTransient(body)) return ky.retry();
  }

  #classify(error: unknown, signal: AbortSignal, deadline: number): SourceError {
    const { source } = this.#options;
    if (error instanceof SourceError) return error;
    if (isHTTPError(error)) {
      const { status, headers } = error.response;
      if (RATE_LIMIT_STATUSES.has(status)) {
        const rest = Math.min(
          retryAfterMs(headers) ?? this.#options.defaultCooldownMs,
          this.#options.maxCooldownMs,
        );
        this.#rest(rest, `answered ${status}`);
        return new SourceError(source, 'rate_limited', `answered ${status}; resting ${rest} ms`, {
          cause: error,
        });
      }
      return new SourceError(source, 'http', `answered ${status}`, { cause: error });
    }
    if (isForceRetryError(error)) {
      return new SourceError(source, 'exchange_error', 'kept reporting a passing failure', {
        cause: error,
      });
    }
    if (isTimeoutError(error) || Date.now() >= deadline) {
      return new SourceError(source, 'timeout', 'no answer in time', { cause: error });
    }
    if (signal.aborted) return new SourceError(source, 'aborted', 'stopped', { cause: error });
    if (isNetworkError(error)) {
      return new SourceError(source, 'network', 'could not be reached', { cause: error });
    }
    const message = error instanceof Error ? error.message : String(error);
    return new SourceError(source, 'network', message, { cause: error });
  }
}

/** Retry-After as delay seconds or an HTTP date, in milliseconds from now. */
export function retryAfterMs(headers: Headers, now = Date.now()): number | undefined {
  const value = headers.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
