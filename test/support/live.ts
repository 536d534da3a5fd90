import { sql, type DatabasePool } from 'slonik';
import { io, type Socket } from 'socket.io-client';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { priceTickPayloads, PRICE_TICKS_CHANNEL } from '../../src/data/prices/priceEvents.ts';
import { createDataService } from '../../src/data/service.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { createApiService } from '../../src/api/service.ts';
import type { Config } from '../../src/shared/config.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import { createRuntime, type Runtime } from '../../src/shared/runtime.ts';
import { TEST_SESSION_KEY } from './api.ts';
import { ApiClient, newAccount } from './apiClient.ts';
import { serve } from './http.ts';
import { eventually } from './wait.ts';
import { createTestRuntime, type TestRuntime } from './runtime.ts';

export interface ApiInstance {
  url: string;
  runtime: Runtime;
  service: ReturnType<typeof createApiService>;
  close(): Promise<void>;
}

export interface LiveHarness {
  runtime: TestRuntime;
  instances: ApiInstance[];
  dataUrl: string;
  /** Signs up a new user on instance `on`; the client keeps its cookies. */
  signUp(on?: number): Promise<{
    client: ApiClient;
    userId: number;
    cookie: string;
    account: ReturnType<typeof newAccount>;
  }>;
  /** Connects a trader to instance `instance` (0 unless said); close() disconnects it. */
  trader(options?: TraderOptions & { instance?: number }): Promise<TraderClient>;
  /** The time of price events, from the harness's start on. */
  clock: TickClock;
  /** Publishes prices at the next second of `clock`, so the live book takes them as newer. */
  tick(prices: Record<string, number>): Promise<void>;
  /** Disconnects the traders, then stops the services and drops the database. */
  close(): Promise<void>;
}

export interface TickClock {
  now(): Date;
  /** Moves the clock on by a second and returns the new time. */
  next(): Date;
}

function tickClock(): TickClock {
  let at = Date.now();
  return { now: () => new Date(at), next: () => new Date((at += 1000)) };
}

/**
 * A real data module and `instances` API processes' worth of services (each with its own
 * runtime and pools, as separate processes would have) on one fresh database, each API with
 * its live gateway attached to its HTTP server.
 */
export async function startLiveHarness(
  options: {
    instances?: number;
    coalesceMs?: number;
    env?: Partial<Record<keyof Config, string>>;
  } = {},
): Promise<LiveHarness> {
  const runtime = await createTestRuntime({
    SESSION_KEYS: TEST_SESSION_KEY,
    DATA_CACHE_MS: '0',
    ...options.env,
  });
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  const { token } = await createToken(runtime.pool, 'api', ['read']);
  const data: RunningServer = await serve(createDataService(runtime).app);
  const instances: ApiInstance[] = [];
  for (let i = 0; i < (options.instances ?? 1); i++) {
    const own = i === 0 ? runtime : await createRuntime(runtime.config, runtime.logger);
    const service = createApiService(own, {
      dataUrl: data.url,
      dataToken: token,
      liveCoalesceMs: options.coalesceMs,
    });
    const server = await serve(service.app);
    service.live.attach(server.server);
    instances.push({
      url: server.url,
      runtime: own,
      service,
      async close() {
        await service.live.close();
        await server.close(1000);
        if (own !== runtime) await own.close();
      },
    });
  }
  const traders: TraderClient[] = [];
  const clock = tickClock();
  return {
    runtime,
    instances,
    dataUrl: data.url,
    async trader({ instance = 0, ...options } = {}) {
      const client = await connectTrader(instances[instance]!.url, options);
      traders.push(client);
      return client;
    },
    clock,
    tick: (prices) => publishTick(runtime.pool, clock.next(), prices),
    async signUp(on = 0) {
      const client = new ApiClient(instances[on]!.url);
      const account = newAccount();
      const response = await client.post('/api/authorize/signup', account);
      if (response.status !== 200) throw new Error(`signup failed: ${response.status}`);
      const userId = Number(
        await runtime.pool.oneFirst(
          sql.unsafe`SELECT id FROM app.users WHERE email = ${account.email}`,
        ),
      );
      return { client, userId, cookie: client.cookieHeader(), account };
    },
    async close() {
      for (const client of traders) client.close();
      for (const instance of instances) await instance.close();
      await data.close(1000);
      await runtime.dispose();
    },
  };
}

/** Sends a price event as the harvester does (split into parts when large). */
export async function publishTick(pool: DatabasePool, at: Date, prices: Record<string, number>) {
  for (const payload of priceTickPayloads(at, Object.entries(prices))) {
    await pool.query(sql.unsafe`SELECT pg_notify(${PRICE_TICKS_CHANNEL}, ${payload})`);
  }
}

export interface TraderClient {
  socket: Socket;
  prices: Array<{ code: string; value: number; timestamp: string; receivedAt: number }>;
  portfolios: any[];
  snapshots: any[];
  /** `prices` events (batched delivery). */
  batches: any[];
  emit(event: string, ...args: unknown[]): Promise<any>;
  waitForPrice(code: string, value: number, timeoutMs?: number): Promise<void>;
  close(): void;
}

export interface TraderOptions {
  cookie?: string;
  origin?: string;
  codes?: string[];
  reconnection?: boolean;
  batch?: boolean;
}

/** A socket.io-client on /trader (websocket transport, as browsers end up using). */
export async function connectTrader(
  url: string,
  options: TraderOptions = {},
): Promise<TraderClient> {
  const headers: Record<string, string> = {};
  if (options.cookie) headers.cookie = options.cookie;
  if (options.origin) headers.origin = options.origin;
  const socket = io(`${url}/trader`, {
    path: '/websocket',
    transports: ['websocket'],
    extraHeaders: headers,
    auth: {
      ...(options.codes ? { codes: options.codes } : {}),
      ...(options.batch ? { batch: true } : {}),
    },
    reconnection: options.reconnection ?? true,
    reconnectionDelay: 100,
    reconnectionDelayMax: 500,
  });
  const client: TraderClient = {
    socket,
    prices: [],
    portfolios: [],
    snapshots: [],
    batches: [],
    emit: (event, ...args) => socket.timeout(10_000).emitWithAck(event, ...args),
    async waitForPrice(code, value, timeoutMs = 10_000) {
      await eventually(
        () => client.prices.some((p) => p.code === code && p.value === value),
        timeoutMs,
        `price ${code}=${value}`,
      );
    },
    close: () => socket.disconnect(),
  };
  socket.on('price', (p) => client.prices.push({ ...p, receivedAt: Date.now() }));
  socket.on('portfolio', (p) => client.portfolios.push(p));
  socket.on('snapshot', (s) => client.snapshots.push(s));
  socket.on('prices', (batch: { timestamp: string; values: Record<string, number> }) => {
    client.batches.push(batch);
    for (const [code, value] of Object.entries(batch.values)) {
      client.prices.push({ code, value, timestamp: batch.timestamp, receivedAt: Date.now() });
    }
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', (error) => {
      socket.disconnect();
      reject(error);
    });
  });
  await eventually(() => client.snapshots.length > 0, 10_000, 'the snapshot');
  return client;
}

/** Waits until every instance's price feed is listening. */
export async function feedsListening(harness: LiveHarness) {
  await eventually(
    () => harness.instances.every((i) => i.service.live.feedListening),
    10_000,
    'price feeds listening',
  );
}
