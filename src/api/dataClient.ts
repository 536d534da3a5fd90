import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import type { z } from 'zod';
import { abandonmentSignal, RequestAbandonedError } from '../shared/abandonment.ts';
import type { ChangeEvents } from '../shared/db/changeEvents.ts';
import { DependencyUnavailableError, OverloadedError } from '../shared/errors.ts';
import type { Logger } from '../shared/logger.ts';
import { counter } from '../shared/metrics.ts';
import {
  candles,
  currencyList,
  timeValues,
  type Candle,
  type CandleWindow,
  type DisplayCurrency,
  type ForwardedAnswer,
  type PassedOnJson,
  type PricePoint,
} from './dataAnswers.ts';

// The API's one way to market data: the data module over HTTP, with its service token.

export interface DataClientOptions {
  baseUrl: string;
  token?: string;
  timeoutMs: number;
  /**
   * How long a snapshot of current prices is reused without hearing of changes; 0 disables the
   * cache. While `events` listens, a snapshot is reused until a change is heard instead.
   */
  cacheMs: number;
  /** Change notifications of the database (src/shared/db/changeEvents.ts). */
  events?: ChangeEvents;
  logger: Logger;
}

/**
 * While changes are heard a snapshot is reused until the next one, but no longer than this: its
 * 24-hour figures slide with the clock, and the data module renews its own once a minute.
 */
const SNAPSHOT_MAX_AGE_MS = 60_000;

interface KeptSnapshot {
  at: number;
  /** The market topic's generation when the fetch began; -1 when changes were not heard. */
  generation: number;
  byCode: Map<string, DisplayCurrency>;
}

const dataCalls = counter(
  'api_data_module_requests_total',
  'Calls of the API to the data module.',
  ['route', 'outcome'],
);

const UNAVAILABLE = 'The market-data module is unavailable; try again shortly.';

function historyPath(code: string, hours: number, intervalSeconds: number): string {
  return `/data/currency/history/${encodeURIComponent(code)}?hours=${hours}&intervalSeconds=${intervalSeconds}`;
}
const PAGE = 1000;

export class DataClient {
  private readonly options: DataClientOptions;
  private snapshot: KeptSnapshot | undefined;
  private inflight: { generation: number; promise: Promise<KeptSnapshot> } | undefined;

  constructor(options: DataClientOptions) {
    this.options = { ...options, baseUrl: options.baseUrl.replace(/\/$/, '') };
  }

  /**
   * Current price of every priced currency by code, one fetch at a time. Reused until a change
   * of the prices is heard (at most a minute), or for `cacheMs` while changes cannot be heard.
   * The same Map object comes back for as long as it is reused (callers may key on it).
   * `fresh` asks the data module now and leaves the cache alone (the live gateway's re-reads
   * must neither see nor change what the HTTP routes reuse).
   */
  async currentPrices(options: { fresh?: boolean } = {}): Promise<Map<string, DisplayCurrency>> {
    if (options.fresh) return (await this.fetchSnapshot(-1)).byCode;
    const events = this.options.events;
    const generation = events?.isListening ? events.generation('market') : -1;
    const kept = this.snapshot;
    if (kept && this.stillCurrent(kept, generation)) return kept.byCode;
    const shared =
      this.inflight?.generation === generation ? this.inflight : this.startFetch(generation);
    return (await shared.promise).byCode;
  }

  /** One fetch per generation at a time; its answer is kept unless a later one already is. */
  private startFetch(generation: number) {
    const entry = {
      generation,
      promise: this.fetchSnapshot(generation).then((fetched) => {
        if (!this.snapshot || this.snapshot.at <= fetched.at) this.snapshot = fetched;
        return fetched;
      }),
    };
    this.inflight = entry;
    void entry.promise
      .finally(() => {
        if (this.inflight === entry) this.inflight = undefined;
      })
      .catch(() => {});
    return entry;
  }

  private stillCurrent(kept: KeptSnapshot, generation: number): boolean {
    const age = Date.now() - kept.at;
    if (this.options.cacheMs === 0) return false;
    if (generation === -1) return kept.generation === -1 && age < this.options.cacheMs;
    return kept.generation === generation && age < SNAPSHOT_MAX_AGE_MS;
  }

  async currentPrice(code: string): Promise<DisplayCurrency | undefined> {
    return (await this.currentPrices()).get(code.toUpperCase());
  }

  /**
   * Price history at the data module's resolution rules; an unknown code or no data gives [].
   * Called for an abandonable request, the call is aborted with it, so the data module stops
   * the query too (the snapshot is shared by many requests and never aborted by one).
   */
  async history(code: string, hours: number, intervalSeconds: number): Promise<PricePoint[]> {
    const response = await this.answerOrNothing(
      historyPath(code, hours, intervalSeconds),
      'history',
    );
    if (!response) return [];
    const points = await this.readJson(response, 'history', timeValues);
    return points.map((p) => ({ time: Date.parse(p.timestamp), value: p.value }));
  }

  /**
   * The history answer's JSON bytes as the data module sends them, for an answer passed on as
   * it is: nothing parsed, validated or encoded again on the API's event loop (a two-year answer
   * at one minute is ~48,000 points). Undefined when there is none (no data, unknown code); a
   * body that is not JSON fails with 503. Aborted with an abandoned request, streaming included.
   */
  async historyJson(
    code: string,
    hours: number,
    intervalSeconds: number,
  ): Promise<PassedOnJson | undefined> {
    const route = 'history';
    const response = await this.answerOrNothing(historyPath(code, hours, intervalSeconds), route);
    if (!response) return undefined;
    const type = response.headers.get('content-type') ?? '';
    if (response.status !== 200 || !response.body || !/^application\/json\b/i.test(type)) {
      await response.body?.cancel();
      dataCalls.inc({ route, outcome: 'unexpected_body' });
      this.options.logger.error(
        { route, status: response.status, type },
        'unexpected data-module answer',
      );
      throw new DependencyUnavailableError(UNAVAILABLE);
    }
    // fetch decodes a compressed answer (a proxy before the data module may compress): its
    // Content-Length is then that of the bytes on the wire, not of those passed on.
    const encoded = (response.headers.get('content-encoding') ?? 'identity') !== 'identity';
    const length = encoded ? Number.NaN : Number(response.headers.get('content-length'));
    return {
      body: Readable.fromWeb(response.body as NodeReadableStream<Uint8Array>),
      ...(Number.isSafeInteger(length) && length > 0 ? { length } : {}),
    };
  }

  /**
   * OHLCV candles from the data module's candle route (the analysts' route, same rules and
   * alignment); an unknown code or no data gives []. Aborted with an abandoned request.
   */
  async candles(code: string, window: CandleWindow): Promise<Candle[]> {
    const query = new URLSearchParams({
      hours: String(window.hours),
      interval: String(window.intervalSeconds),
    });
    if (window.timeZone) query.set('tz', window.timeZone);
    const path = `/data/candles/${encodeURIComponent(code)}?${query.toString()}`;
    const response = await this.answerOrNothing(path, 'candles');
    if (!response) return [];
    return this.readJson(response, 'candles', candles);
  }

  /**
   * A market read for the current request (aborted with it): its answer, or undefined, its body
   * let go, when there is nothing to read (204: no data in the window; 404: unknown currency).
   */
  private async answerOrNothing(path: string, route: string): Promise<Response | undefined> {
    const response = await this.request(path, route, abandonmentSignal());
    if (response.status === 204 || response.status === 404) {
      await response.body?.cancel();
      return undefined;
    }
    return response;
  }

  /**
   * Posts a JSON body to a data-module write route and hands back its answer. With
   * `authorization` the caller's own credentials go along (and its 401/403 are the caller's);
   * otherwise the API's token does, and a refusal of it is our failure (503).
   */
  async forward(
    path: string,
    body: unknown,
    authorization?: string,
    idempotencyKey?: string,
  ): Promise<ForwardedAnswer> {
    const route = 'forward';
    let response: Response;
    try {
      response = await fetch(`${this.options.baseUrl}${path}`, {
        method: 'POST',
        headers: {
          accept: 'application/json',
          'content-type': 'application/json',
          ...this.authorization(authorization),
          ...(idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }),
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
    } catch (error) {
      dataCalls.inc({ route, outcome: 'unreachable' });
      this.options.logger.warn(
        { reason: describeFailure(error), route },
        'data module unreachable',
      );
      throw new DependencyUnavailableError(UNAVAILABLE, error);
    }
    const ours = authorization === undefined;
    const refused = response.status === 401 || response.status === 403;
    if (response.status >= 500 || (ours && refused)) {
      await this.failed(response, route);
    }
    dataCalls.inc({ route, outcome: 'ok' });
    const text = await response.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch (error) {
      dataCalls.inc({ route, outcome: 'broken_body' });
      throw new DependencyUnavailableError(UNAVAILABLE, error);
    }
    const headers: Record<string, string> = {};
    for (const name of ['retry-after', 'www-authenticate', 'idempotent-replayed']) {
      const value = response.headers.get(name);
      if (value) headers[name] = value;
    }
    return { status: response.status, body: json, headers };
  }

  /** Readiness: the data module answers and accepts our token. */
  async ping(): Promise<void> {
    const response = await this.request('/data/currency/all?limit=1', 'ping');
    await response.body?.cancel();
  }

  /**
   * Reads the whole list. Always with `Cache-Control: no-cache`: the data module then includes
   * every change committed before the call, even one it has not heard of yet (we may have).
   */
  private async fetchSnapshot(generation: number): Promise<KeptSnapshot> {
    const at = Date.now();
    const byCode = new Map<string, DisplayCurrency>();
    // The data module pages its list (at most PAGE a request); a short page is the last.
    for (let offset = 0; ; offset += PAGE) {
      const response = await this.request(
        `/data/currency/all?limit=${PAGE}&offset=${offset}`,
        'all',
        undefined,
        { 'cache-control': 'no-cache' },
      );
      const { currencies } = await this.readJson(response, 'all', currencyList);
      for (const c of currencies) byCode.set(c.currencyCode, c);
      if (currencies.length < PAGE) break;
    }
    return { at, generation, byCode };
  }

  /** Any answer the API can use (2xx, 404); everything else becomes a 503 for our caller. */
  private async request(
    path: string,
    route: string,
    abandoned?: AbortSignal,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    let response: Response;
    try {
      response = await fetch(`${this.options.baseUrl}${path}`, {
        headers: { accept: 'application/json', ...headers, ...this.authorization() },
        signal: abandoned ? AbortSignal.any([timeout, abandoned]) : timeout,
      });
    } catch (error) {
      if (abandoned?.aborted) {
        dataCalls.inc({ route, outcome: 'abandoned' });
        throw new RequestAbandonedError(error);
      }
      dataCalls.inc({ route, outcome: 'unreachable' });
      this.options.logger.warn(
        { reason: describeFailure(error), route },
        'data module unreachable',
      );
      throw new DependencyUnavailableError(UNAVAILABLE, error);
    }
    if (response.ok || response.status === 404) {
      dataCalls.inc({ route, outcome: 'ok' });
      return response;
    }
    return this.failed(response, route);
  }

  private authorization(callers?: string): Record<string, string> {
    if (callers !== undefined) return { authorization: callers };
    return this.options.token ? { authorization: `Bearer ${this.options.token}` } : {};
  }

  /**
   * Counts and logs an answer the API cannot use, and fails with 503 for our caller: shed by the
   * data module at capacity, with its Retry-After; anything else as unavailable.
   */
  private async failed(response: Response, route: string): Promise<never> {
    const shed = response.status === 503 && (await errorCode(response)) === 'overloaded';
    if (!response.bodyUsed) await response.body?.cancel();
    dataCalls.inc({ route, outcome: shed ? 'shed' : `status_${response.status}` });
    if (shed) {
      throw new OverloadedError(
        Number(response.headers.get('retry-after')) || 1,
        'The market-data module is at capacity; retry shortly.',
      );
    }
    const level = response.status === 401 || response.status === 403 ? 'error' : 'warn';
    this.options.logger[level](
      { status: response.status, route },
      response.status === 401 || response.status === 403
        ? 'the data module refused our token (check DATA_TOKEN)'
        : 'the data module answered with an error',
    );
    throw new DependencyUnavailableError(UNAVAILABLE);
  }

  private async readJson<T>(response: Response, route: string, schema: z.ZodType<T>): Promise<T> {
    let body: unknown;
    try {
      body = await response.json();
    } catch (error) {
      dataCalls.inc({ route, outcome: 'broken_body' });
      throw new DependencyUnavailableError(UNAVAILABLE, error);
    }
    const parsed = schema.safeParse(body);
    if (!parsed.success) {
      dataCalls.inc({ route, outcome: 'unexpected_body' });
      this.options.logger.error(
        { route, issues: parsed.error.issues },
        'unexpected data-module answer',
      );
      throw new DependencyUnavailableError(UNAVAILABLE, parsed.error);
    }
    return parsed.data;
  }
}

/** The `error.code` of an error answer, if it has one. */
async function errorCode(response: Response): Promise<string | undefined> {
  try {
    const body = (await response.json()) as { error?: { code?: unknown } };
    return typeof body.error?.code === 'string' ? body.error.code : undefined;
  } catch {
    return undefined;
  }
}

function describeFailure(error: unknown): string {
  if (error instanceof Error && error.name === 'TimeoutError') return 'timed out';
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
}
