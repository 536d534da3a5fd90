// One round of bench:load --flood (see flood.ts): a `platform start --role all` child process
// started from a given checkout, the attacker's clients in a process of their own, and, from
// this process, one client signing in again and again, one reading both snapshots and one polling
// both /health/ready. Returns what the round measured; flood.ts prints the rounds side by side.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql, type DatabasePool } from 'slonik';
import { cpuSecondsOf, listenOverflows, sampleAcceptQueue, startChild } from './benchChildren.ts';
import { runFloodClients, type FloodOptions, type FloodTally } from './floodClients.ts';
import type { ProbeTally } from './floodProbe.ts';
import { scrapePlatform, shedTiming, type ShedTiming } from './shedTiming.ts';

export interface RoundOptions {
  /** The checkout whose bin/platform.mjs runs (this one, or a baseline's). */
  platformRoot: string;
  /** The node binary (this checkout's Node 24). */
  node: string;
  dbUrl: string;
  pool: DatabasePool;
  /** A read token of the data module, for its snapshot. */
  token: string;
  account: { email: string; password: string };
  clients: number;
  seconds: number;
  clientTimeoutMs: number;
  /** FLOOD_ADDRESSES: source addresses the attacker and the probe rotate over (0: 127.0.0.1). */
  addresses: number;
  /** FLOOD_CLIENTS_PROCESS=same runs the attacker inside this process. */
  clientsInProcess: boolean;
  /** Options for the platform's node (e.g. --cpu-prof). */
  platformNodeArgs: string[];
}

export interface Latencies {
  n: number;
  p50: number;
  p99: number;
  max: number;
  /** Seconds into the flood of the three slowest, slowest first. */
  slowestAt: number[];
}

export interface RoundResult {
  tally: FloodTally;
  /** The open-loop probe's tally (none when the clients ran in this process). */
  probe?: ProbeTally;
  /** The platform's own timing of its shed answers (undefined: not recorded by that checkout). */
  platformShed?: ShedTiming;
  /** Connections dropped on a full accept queue during the round, machine-wide. */
  listenOverflows: number;
  /** The API's accept queue, sampled every 100 ms: the largest, and samples with any waiting. */
  acceptQueue: { largest: number; samples: number; waiting: number };
  /** The platform's event-loop delay over the round (ms), from its own /metrics. */
  platformLoopDelay: { p99: number; max: number };
  signIn: Latencies;
  signInStatuses: Map<number, number>;
  apiSnapshot: Latencies;
  dataSnapshot: Latencies;
  readiness: { api: Map<number, number>; data: Map<number, number> };
  s500: number;
  abandoned: readonly unknown[];
  platformCpuSeconds: number;
  floodRequests: number;
  load: number[];
}

async function freePort(): Promise<number> {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as { port: number };
  probe.close();
  await once(probe, 'close');
  return port;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Latency samples: [ms, seconds since the flood started]. */
type Samples = Array<[number, number]>;

export function summary(samples: Samples | number[]): Latencies {
  const pairs: Samples = samples.map((s) => (typeof s === 'number' ? [s, NaN] : s));
  const sorted = pairs.map(([ms]) => ms).sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50: Math.round(percentile(sorted, 50)),
    p99: Math.round(percentile(sorted, 99)),
    max: Math.round(sorted.at(-1) ?? NaN),
    slowestAt: [...pairs]
      .sort((a, b) => b[0] - a[0])
      .slice(0, 3)
      .map(([, at]) => Math.round(at * 10) / 10),
  };
}

/** One request timed to its last byte; a failed one (no answer) has status 0. */
async function timed(url: string, init: RequestInit = {}) {
  const started = performance.now();
  try {
    const response = await fetch(url, init);
    await response.arrayBuffer();
    return { status: response.status, ms: performance.now() - started };
  } catch {
    return { status: 0, ms: performance.now() - started };
  }
}

async function waitReady(url: string, deadlineMs: number) {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    try {
      if ((await fetch(`${url}/health/ready`)).status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} not ready`);
    await sleep(250);
  }
}

/**
 * The attacker's clients and the probe, by default each in a child process of its own (an
 * attacker is not inside the measuring process, on the event loop that times the sign-ins and
 * snapshots); FLOOD_CLIENTS_PROCESS=same runs the clients here, without a probe.
 */
function startFlood(options: FloodOptions, node: string, inProcess: boolean) {
  if (inProcess) {
    return { started: Promise.resolve(), tally: runFloodClients(options), probe: undefined };
  }
  const env = {
    FLOOD_API_URL: options.apiUrl,
    FLOOD_CLIENTS: String(options.clients),
    FLOOD_SECONDS: String(options.seconds),
    FLOOD_CLIENT_TIMEOUT_MS: String(options.timeoutMs),
    FLOOD_ADDRESSES: String(options.addresses),
  };
  const clients = startChild<FloodTally>(node, 'floodClients.ts', env);
  const probe = startChild<ProbeTally>(node, 'floodProbe.ts', env);
  return {
    started: Promise.all([clients.started, probe.started]).then(() => {}),
    tally: clients.tally,
    probe: probe.tally,
  };
}

function startPlatform(options: RoundOptions, ports: number[]) {
  const [apiPort, dataPort, opsPort] = ports.map(String);
  return spawn(
    options.node,
    [
      ...options.platformNodeArgs,
      join(options.platformRoot, 'bin', 'platform.mjs'),
      'start',
      '--role',
      'all',
    ],
    {
      env: {
        ...process.env,
        DATABASE_URL: options.dbUrl,
        API_PORT: apiPort,
        DATA_PORT: dataPort,
        WORKER_METRICS_PORT: opsPort,
        PLATFORM_LOAD_CURRENCIES: 'false',
        MARKET_SOURCE: 'simulated',
        HEAL_LOOKBACK_HOURS: '0',
        SESSION_KEYS: 'bench-flood-session-key-0123456789abcdef012345',
        LOG_LEVEL: 'error',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
}

/** One round against a fresh platform process (its in-memory rate limits start empty). */
export async function runRound(options: RoundOptions): Promise<RoundResult> {
  const ports = [await freePort(), await freePort(), await freePort()];
  const platform = startPlatform(options, ports);
  const api = `http://127.0.0.1:${ports[0]}`;
  const data = `http://127.0.0.1:${ports[1]}`;
  try {
    await waitReady(data, 120_000);
    await waitReady(api, 120_000);
    // Read before the attacker and the probe start: the difference after is the round's.
    const shedBefore = await scrapePlatform(data);
    const overflowsBefore = listenOverflows();
    const acceptQueue = sampleAcceptQueue(ports[0]!);
    const flood = startFlood(
      {
        apiUrl: api,
        clients: options.clients,
        seconds: options.seconds,
        timeoutMs: options.clientTimeoutMs,
        addresses: options.addresses,
      },
      options.node,
      options.clientsInProcess,
    );
    await flood.started;
    const cpuBefore = cpuSecondsOf(platform.pid);
    const started = Date.now();
    const ends = started + options.seconds * 1000;
    const running = () => Date.now() < ends;
    const at = () => (Date.now() - started) / 1000;
    const signIns: Samples = [];
    const signInStatuses = new Map<number, number>();
    const signInClient = async () => {
      while (running()) {
        const when = at();
        const { status, ms } = await timed(`${api}/api/authorize/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(options.account),
        });
        signInStatuses.set(status, (signInStatuses.get(status) ?? 0) + 1);
        signIns.push([ms, when]);
      }
    };
    const apiSnapshots: Samples = [];
    const dataSnapshots: Samples = [];
    const snapshotStatuses = new Map<number, number>();
    const snapshotClient = async () => {
      while (running()) {
        for (const [list, url, headers] of [
          [apiSnapshots, `${api}/api/currency/all`, {}],
          [
            dataSnapshots,
            `${data}/data/currency/all`,
            { authorization: `Bearer ${options.token}` },
          ],
        ] as const) {
          const when = at();
          const { status, ms } = await timed(url, { headers });
          snapshotStatuses.set(status, (snapshotStatuses.get(status) ?? 0) + 1);
          list.push([ms, when]);
        }
        await sleep(50);
      }
    };
    const readiness = { api: new Map<number, number>(), data: new Map<number, number>() };
    const readinessClient = async () => {
      while (running()) {
        for (const [counts, url] of [
          [readiness.api, api],
          [readiness.data, data],
        ] as const) {
          const { status } = await timed(`${url}/health/ready`);
          counts.set(status, (counts.get(status) ?? 0) + 1);
        }
        await sleep(200);
      }
    };

    const [tally, probe] = await Promise.all([
      flood.tally,
      flood.probe,
      signInClient(),
      snapshotClient(),
      readinessClient(),
    ]);
    const platformCpuSeconds = cpuSecondsOf(platform.pid) - cpuBefore;
    const load = loadavg();
    const overflows = listenOverflows() - overflowsBefore;
    const acceptQueueSeen = acceptQueue();
    const after = await scrapePlatform(data);
    const platformShed = shedTiming(shedBefore.shed, after.shed);
    await sleep(Math.max(0, tally.endedAt + 2000 - Date.now()));
    const abandoned = await options.pool.any(sql.unsafe`
      SELECT left(query, 80) AS query, now() - query_start AS running_for
      FROM pg_stat_activity
      WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
        AND query_start < ${new Date(tally.endedAt).toISOString()}::timestamptz`);
    const statuses = [
      ...Object.entries(tally.statuses).map(([s, n]) => [Number(s), n] as const),
      ...signInStatuses,
      ...snapshotStatuses,
    ];
    return {
      tally,
      probe,
      platformShed,
      listenOverflows: overflows,
      acceptQueue: acceptQueueSeen,
      platformLoopDelay: after.loopDelay,
      signIn: summary(signIns),
      signInStatuses,
      apiSnapshot: summary(apiSnapshots),
      dataSnapshot: summary(dataSnapshots),
      readiness,
      s500: statuses
        // Status 0 (no answer at all) counts with the 500s: both are failures of the platform.
        .filter(([status]) => status === 0 || (status >= 500 && status !== 503))
        .reduce((sum, [, n]) => sum + n, 0),
      abandoned,
      platformCpuSeconds,
      floodRequests: Object.values(tally.statuses).reduce((a, b) => a + b, 0),
      load,
    };
  } finally {
    platform.kill('SIGTERM');
    await once(platform, 'exit').catch(() => {});
  }
}
