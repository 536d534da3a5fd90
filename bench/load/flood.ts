// bench:load --flood — the abuse scenario of the admission-control work, against a real
// `platform start --role all` child process: FLOOD_CLIENTS (default 200) concurrent anonymous
// clients ask the public /api/currency/history/BTC for two years of minute prices at varying
// intervalSeconds (slow, uncacheable answers), each giving up after FLOOD_CLIENT_TIMEOUT_MS
// (default 3000) and firing again at once, for FLOOD_SECONDS (default 20). The flood runs in a
// child process of its own (floodClients.ts; FLOOD_CLIENTS_PROCESS=same runs it in this one).
// Meanwhile, from this process, one client signs in again and again, one reads the snapshots (API
// and data module) and one polls /health/ready on both services. FLOOD_PLATFORM_NODE_ARGS passes
// options to the platform's node (e.g. --cpu-prof). Printed with the platform's CPU time per
// flood request and the load average, beside the goal: sign-in p99 < 1 s, snapshot p99 < 200 ms, readiness 200 throughout,
// every shed answer 429/503 with Retry-After within 100 ms, zero 500s, and no abandoned SQL
// running 2 s after the flood's requests ended (pg_stat_activity).
import { benchDatabaseUrl, recreateDatabase } from '../shared/databases.ts';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg } from 'node:os';
import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { sql } from 'slonik';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { createDatabasePool } from '../../src/shared/db/pool.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { runFloodClients, type FloodOptions, type FloodTally } from './floodClients.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLIENTS = Number(process.env.FLOOD_CLIENTS ?? 200);
const SECONDS = Number(process.env.FLOOD_SECONDS ?? 20);
const CLIENT_TIMEOUT_MS = Number(process.env.FLOOD_CLIENT_TIMEOUT_MS ?? 3000);
// USER_HZ: 100 on every Linux build Node supports.
const CLOCK_TICKS_PER_SECOND = 100;
const CLIENTS_PROCESS = process.env.FLOOD_CLIENTS_PROCESS === 'same' ? 'same' : 'separate';
const DB = 'bench_load_flood';
const dbUrl = benchDatabaseUrl(DB);

async function freePort(): Promise<number> {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as { port: number };
  probe.close();
  await once(probe, 'close');
  return port;
}

async function prepareDatabase() {
  await recreateDatabase(DB);
  // Writing two years of minutes takes longer than the default statement time-out on a busy machine.
  const pool = await createDatabasePool(dbUrl, { statementTimeoutMs: 600_000 });
  await generateCurrencies({ pool, logger: createLogger('warn'), loadFromExchange: false });
  // Two years of minute prices for BTC: a history answer over them reads ~1 M rows.
  await pool.query(sql.unsafe`
    INSERT INTO price_observations (currency_code, time, open, high, low, close, volume, source)
    SELECT 'BTC', t, p, p, p, p, 1, 'bench'
    FROM generate_series(date_trunc('minute', now()) - interval '730 days',
                         date_trunc('minute', now()) - interval '1 minute', interval '1 minute') AS t,
         LATERAL (SELECT 50000 + 1000 * sin(extract(epoch FROM t) / 3600) AS p) AS price`);
  const { token } = await createToken(pool, 'bench-flood', ['read']);
  return { pool, token };
}

/**
 * The attacker's clients, by default in a child process of their own (FLOOD_CLIENTS_PROCESS=same
 * runs them inside this process, on the event loop that also times the sign-ins and snapshots).
 */
function startFlood(options: FloodOptions): { started: Promise<void>; tally: Promise<FloodTally> } {
  if (CLIENTS_PROCESS === 'same') {
    return { started: Promise.resolve(), tally: runFloodClients(options) };
  }
  const child = spawn(process.execPath, [join(root, 'bench', 'load', 'floodClients.ts')], {
    env: {
      ...process.env,
      FLOOD_API_URL: options.apiUrl,
      FLOOD_CLIENTS: String(options.clients),
      FLOOD_SECONDS: String(options.seconds),
      FLOOD_CLIENT_TIMEOUT_MS: String(options.timeoutMs),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  const output = (async () => {
    const read: string[] = [];
    for await (const line of lines) read.push(line);
    return read;
  })();
  let onStarted = () => {};
  const started = new Promise<void>((resolve) => (onStarted = resolve));
  lines.once('line', () => onStarted());
  const tally = (async () => {
    const [code] = (await once(child, 'exit')) as [number | null];
    const read = await output;
    onStarted();
    if (code !== 0 || read.length < 2) throw new Error(`flood clients exited with ${code}`);
    return JSON.parse(read.at(-1)!) as FloodTally;
  })();
  return { started, tally };
}

/** CPU time (user + system, all threads) a process has used so far, from /proc (Linux). */
function cpuSecondsOf(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function summary(latencies: number[]) {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50: Math.round(percentile(sorted, 50)),
    p99: Math.round(percentile(sorted, 99)),
    max: Math.round(sorted.at(-1) ?? NaN),
  };
}

async function timed(url: string, init: RequestInit = {}) {
  const started = performance.now();
  const response = await fetch(url, init);
  await response.arrayBuffer();
  return { status: response.status, ms: performance.now() - started, response };
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

/** The flood scenario, printed as a table beside the goal values. */
export async function runFlood() {
  const { pool, token } = await prepareDatabase();
  const [apiPort, dataPort, opsPort] = [await freePort(), await freePort(), await freePort()];
  const platform = spawn(
    join(root, 'node_modules', '.bin', 'node'),
    [
      ...(process.env.FLOOD_PLATFORM_NODE_ARGS ?? '').split(' ').filter(Boolean),
      join(root, 'bin', 'platform.mjs'),
      'start',
      '--role',
      'all',
    ],
    {
      env: {
        ...process.env,
        DATABASE_URL: dbUrl,
        API_PORT: String(apiPort),
        DATA_PORT: String(dataPort),
        WORKER_METRICS_PORT: String(opsPort),
        PLATFORM_LOAD_CURRENCIES: 'false',
        MARKET_SOURCE: 'simulated',
        HEAL_LOOKBACK_HOURS: '0',
        SESSION_KEYS: 'bench-flood-session-key-0123456789abcdef012345',
        LOG_LEVEL: 'error',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const api = `http://127.0.0.1:${apiPort}`;
  const data = `http://127.0.0.1:${dataPort}`;
  try {
    await waitReady(data, 120_000);
    await waitReady(api, 120_000);
    const account = { email: 'flood@example.com', username: 'flood', password: 'flood passphrase' };
    const signup = await fetch(`${api}/api/authorize/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(account),
    });
    if (signup.status !== 200) throw new Error(`sign-up failed: ${signup.status}`);

    const flood = startFlood({
      apiUrl: api,
      clients: CLIENTS,
      seconds: SECONDS,
      timeoutMs: CLIENT_TIMEOUT_MS,
    });
    await flood.started;
    const cpuBefore = cpuSecondsOf(platform.pid);
    const ends = Date.now() + SECONDS * 1000;
    const running = () => Date.now() < ends;
    const signIns: number[] = [];
    const signInStatuses = new Map<number, number>();
    const signInClient = async () => {
      while (running()) {
        const { status, ms } = await timed(`${api}/api/authorize/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: account.email, password: account.password }),
        });
        signInStatuses.set(status, (signInStatuses.get(status) ?? 0) + 1);
        signIns.push(ms);
      }
    };
    const apiSnapshots: number[] = [];
    const dataSnapshots: number[] = [];
    const snapshotStatuses = new Map<number, number>();
    const snapshotClient = async () => {
      while (running()) {
        for (const [list, url, headers] of [
          [apiSnapshots, `${api}/api/currency/all`, {}],
          [dataSnapshots, `${data}/data/currency/all`, { authorization: `Bearer ${token}` }],
        ] as const) {
          const { status, ms } = await timed(url, { headers });
          snapshotStatuses.set(status, (snapshotStatuses.get(status) ?? 0) + 1);
          list.push(ms);
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
          const { status } = await timed(`${url}/health/ready`).catch(() => ({ status: 0 }));
          counts.set(status, (counts.get(status) ?? 0) + 1);
        }
        await sleep(200);
      }
    };

    const [tally] = await Promise.all([
      flood.tally,
      signInClient(),
      snapshotClient(),
      readinessClient(),
    ]);
    const ended = tally.endedAt;
    const platformCpu = cpuSecondsOf(platform.pid) - cpuBefore;
    const floodRequests = Object.values(tally.statuses).reduce((a, b) => a + b, 0);
    await sleep(Math.max(0, ended + 2000 - Date.now()));
    const abandoned = await pool.any(sql.unsafe`
      SELECT left(query, 80) AS query, now() - query_start AS running_for
      FROM pg_stat_activity
      WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
        AND query_start < ${new Date(ended).toISOString()}::timestamptz`);

    const countsOf = (m: Map<number | string, number>) =>
      [...m].map(([status, n]) => `${status}: ${n}`).join(', ');
    const floodStatuses = new Map<number | string, number>(
      Object.entries(tally.statuses).map(([status, n]) => [Number(status) || status, n]),
    );
    const s500 = [...floodStatuses, ...signInStatuses, ...snapshotStatuses]
      .filter(([status]) => typeof status === 'number' && status >= 500 && status !== 503)
      .reduce((sum, [, n]) => sum + n, 0);
    const shed = summary(tally.shed);
    const shedFast = tally.shed.filter((ms) => ms <= 100).length;
    const signIn = summary(signIns);
    const apiSnap = summary(apiSnapshots);
    const dataSnap = summary(dataSnapshots);
    const notReady = (m: Map<number, number>) =>
      [...m].filter(([s]) => s !== 200).reduce((sum, [, n]) => sum + n, 0);
    const rows: Array<[string, string, string]> = [
      [
        'sign-in p99 (ms)',
        `${signIn.p99} (p50 ${signIn.p50}, n ${signIn.n}; ${countsOf(signInStatuses)})`,
        '< 1000',
      ],
      [
        'snapshot p99, API /api/currency/all (ms)',
        `${apiSnap.p99} (p50 ${apiSnap.p50}, n ${apiSnap.n})`,
        '< 200',
      ],
      [
        'snapshot p99, data /data/currency/all (ms)',
        `${dataSnap.p99} (p50 ${dataSnap.p50}, n ${dataSnap.n})`,
        '< 200',
      ],
      [
        '/health/ready API: not 200',
        `${notReady(readiness.api)} of ${[...readiness.api.values()].reduce((a, b) => a + b, 0)}`,
        '0',
      ],
      [
        '/health/ready data: not 200',
        `${notReady(readiness.data)} of ${[...readiness.data.values()].reduce((a, b) => a + b, 0)}`,
        '0',
      ],
      [
        'shed answers (429/503)',
        `${shed.n}; p50 ${shed.p50} ms, p99 ${shed.p99} ms, max ${shed.max} ms; ${shedFast} within 100 ms; ${tally.shedWithoutRetryAfter} without Retry-After`,
        'all within 100 ms, all with Retry-After',
      ],
      ['500s (any route)', String(s500), '0'],
      ['abandoned SQL running 2 s after the requests ended', String(abandoned.length), '0'],
    ];
    console.log(
      `\n${CLIENTS} anonymous clients for ${SECONDS} s (each gives up after ${CLIENT_TIMEOUT_MS} ms), ` +
        `against platform start --role all\nflood answers: ${countsOf(floodStatuses)}; ` +
        `answered 2xx p50 ${summary(tally.answered).p50} ms\n` +
        `platform CPU during the flood: ${platformCpu.toFixed(1)} s ` +
        `(${Math.round((platformCpu / SECONDS) * 100)} % of one core), ` +
        `${Math.round((platformCpu * 1e6) / floodRequests)} µs per flood request; ` +
        `load average ${loadavg()
          .map((l) => l.toFixed(1))
          .join(', ')}\n`,
    );
    console.log('| measure | this run | goal |');
    console.log('|---|---|---|');
    for (const [name, value, goal] of rows) console.log(`| ${name} | ${value} | ${goal} |`);
    for (const row of abandoned) console.log('still running:', JSON.stringify(row));
  } finally {
    platform.kill('SIGTERM');
    await once(platform, 'exit').catch(() => {});
    await pool.end();
  }
}
