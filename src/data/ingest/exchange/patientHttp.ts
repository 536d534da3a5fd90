import { setTimeout as delay } from 'node:timers/promises';

// The HTTP access of history downloads (backfill, healing). Unlike the live harvester, which must
// answer within its slot and so gives up quickly, a download can wait: it honours 429 with
// Retry-After, backs off on time-outs, network errors and 5xx, keeps a least spacing between calls
// (the exchanges' public limits are per IP and per second), and stops at once on a refusal.

export class ExchangeError extends Error {
  readonly status: number | undefined;
  readonly retryable: boolean;
  constructor(message: string, status?: number, retryable = false) {
    super(message);
    this.name = 'ExchangeError';
    this.status = status;
    this.retryable = retryable;
  }
}

export interface PatientHttpOptions {
  timeoutMs?: number;
  /** Retries of one request after time-outs, network errors and 5xx (429s are counted apart). */
  maxRetries?: number;
  /** Least time between the starts of two calls. */
  minSpacingMs?: number;
  /** Injected by tests to observe waits without spending them. */
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  /** First back-off after a failure; doubles each retry. */
  backoffMs?: number;
  onWait?: (reason: string, ms: number) => void;
}

export interface GetJsonHooks {
  /** A refusal's text for the error message (the exchange's own error field). */
  errorText?: (body: string) => string | undefined;
  /** Body-level rate limits (Kraken says so with status 200): the rest to take, else undefined. */
  throttledBody?: (body: unknown) => number | undefined;
  /** Statuses that end the download at once (Binance's 418 IP ban). */
  fatal?: (response: Response) => ExchangeError | undefined;
  /** Pacing after a good answer (Binance's used-weight header). */
  after?: (response: Response) => Promise<void>;
}

/** Waits for a default minute when a 429 carries no Retry-After. */
const DEFAULT_RETRY_AFTER_MS = 60_000;

export class PatientHttp {
  readonly name: string;
  private readonly options: Required<Omit<PatientHttpOptions, 'onWait'>> &
    Pick<PatientHttpOptions, 'onWait'>;
  private nextCallAt = 0;

  constructor(name: string, options: PatientHttpOptions = {}) {
    this.name = name;
    this.options = {
      timeoutMs: 10_000,
      maxRetries: 5,
      minSpacingMs: 0,
      sleep: (ms) => delay(ms),
      now: () => Date.now(),
      backoffMs: 500,
      ...options,
    };
  }

  async getJson(url: string, hooks: GetJsonHooks = {}): Promise<unknown> {
    const body = await this.request(url, hooks, {
      accept: 'application/json',
      read: (response): Promise<unknown> => response.json(),
    });
    // Without missingOn404, a 404 is a refusal (thrown), so the body was found.
    return body.found ? body.value : undefined;
  }

  /**
   * A file's bytes (archive downloads), or null when the server has no such file (404). The
   * time-out is an idle one here: it runs until the answer starts and again between two chunks of
   * the body, so a large file on a slow line is not cut off while it keeps arriving.
   */
  async getBytes(url: string, hooks: GetJsonHooks = {}): Promise<Buffer | null> {
    const body = await this.request(url, hooks, {
      accept: '*/*',
      missingOn404: true,
      read: async (response, stillAlive) => {
        const chunks: Uint8Array[] = [];
        if (response.body) {
          for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
            stillAlive();
            chunks.push(chunk);
          }
        }
        return Buffer.concat(chunks);
      },
    });
    return body.found ? body.value : null;
  }

  private async request<T>(
    url: string,
    hooks: GetJsonHooks,
    how: {
      accept: string;
      /** A 404 means "no such file" (the answer is { found: false }) rather than a refusal. */
      missingOn404?: boolean;
      /** Reads the body of a good answer; calls stillAlive() to restart the time-out. */
      read: (response: Response, stillAlive: () => void) => Promise<T>;
    },
  ): Promise<{ found: true; value: T } | { found: false }> {
    let failures = 0;
    let throttles = 0;
    const throttled = async (ms: number, reason: string) => {
      if (++throttles > this.options.maxRetries) {
        throw new ExchangeError(`${this.name} kept answering 429 (rate limited)`, 429, true);
      }
      await this.wait(reason, ms);
    };
    for (;;) {
      await this.awaitTurn();
      let body: T;
      let response: Response;
      const deadline = new IdleDeadline(this.options.timeoutMs);
      try {
        response = await fetch(url, {
          signal: deadline.signal,
          headers: { accept: how.accept },
        });
        if (response.status === 429) {
          await response.body?.cancel();
          await throttled(retryAfterMs(response) ?? DEFAULT_RETRY_AFTER_MS, '429 rate limited');
          continue;
        }
        const fatal = hooks.fatal?.(response);
        if (fatal) {
          await response.body?.cancel();
          throw fatal;
        }
        if (response.status >= 500) {
          await response.body?.cancel();
          throw new ExchangeError(
            `${this.name} answered ${response.status}`,
            response.status,
            true,
          );
        }
        if (response.status === 404 && how.missingOn404) {
          await response.body?.cancel();
          return { found: false };
        }
        if (!response.ok) {
          const text = await response.text().catch(() => '');
          const reason = hooks.errorText?.(text) ?? (text.slice(0, 200) || response.statusText);
          throw new ExchangeError(
            `${this.name} refused the request (${response.status}): ${reason}`,
            response.status,
          );
        }
        body = await how.read(response, () => deadline.restart());
      } catch (error) {
        if (error instanceof ExchangeError && (!error.retryable || error.status === 429))
          throw error;
        if (++failures > this.options.maxRetries) {
          throw new ExchangeError(
            `${this.name} request failed after ${failures} attempts: ${describe(error)}`,
            (error as ExchangeError).status,
          );
        }
        await this.wait(describe(error), this.options.backoffMs * 2 ** (failures - 1));
        continue;
      } finally {
        deadline.clear();
      }
      const rest = hooks.throttledBody?.(body);
      if (rest !== undefined) {
        await throttled(rest, 'rate limited (said in the answer)');
        continue;
      }
      await hooks.after?.(response);
      return { found: true, value: body };
    }
  }

  async wait(reason: string, ms: number) {
    this.options.onWait?.(reason, ms);
    await this.options.sleep(ms);
  }

  get now(): number {
    return this.options.now();
  }

  private async awaitTurn() {
    const { minSpacingMs } = this.options;
    if (minSpacingMs <= 0) return;
    const now = Date.now();
    const wait = this.nextCallAt - now;
    this.nextCallAt = Math.max(now, this.nextCallAt) + minSpacingMs;
    // Spacing is real time even under an injected sleep: it is what keeps us inside the limits.
    if (wait > 0) await delay(wait);
  }
}

/** An abort signal that fires after `ms` without a restart(): a time-out on silence. */
class IdleDeadline {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout;
  private readonly ms: number;

  constructor(ms: number) {
    this.ms = ms;
    this.timer = this.arm();
  }

  get signal() {
    return this.controller.signal;
  }

  restart() {
    clearTimeout(this.timer);
    this.timer = this.arm();
  }

  clear() {
    clearTimeout(this.timer);
  }

  private arm() {
    return setTimeout(
      () => this.controller.abort(new DOMException('request timed out', 'TimeoutError')),
      this.ms,
    );
  }
}

export function retryAfterMs(response: Response): number | undefined {
  const header = response.headers.get('retry-after');
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function describe(error: unknown): string {
  // AbortSignal.timeout() rejects with a DOMException, which is not always an Error instance.
  const { name, message } = (error ?? {}) as { name?: string; message?: string };
  if (name === 'TimeoutError') return 'request timed out';
  return message ?? String(error);
}
