// bench:load --flood — the abuse scenario of the admission-control work, against a real
// `platform start --role all` child process: FLOOD_CLIENTS (default 200) concurrent anonymous
// clients ask the public /api/currency/history/BTC for two years of minute prices at varying
// intervalSeconds (slow, uncacheable answers), each giving up after FLOOD_CLIENT_TIMEOUT_MS
// (default 3000) and firing again at once, for FLOOD_SECONDS (default 20). The flood runs in a
// child process of its own (floodClients.ts; FLOOD_CLIENTS_PROCESS=same runs it in this one).
// Meanwhile, from this process, one client signs in again and again, one reads the snapshots (API
// and data module) and one polls /health/ready on both services (floodRound.ts).
//
// FLOOD_BASELINE=<checkout> (a worktree of the baseline commit, with node_modules) runs rounds
// of that checkout's platform and of this one alternately, FLOOD_ROUNDS (default 3) of each, on
// the same database, and prints them side by side: on a shared machine only such an A/B in one
// run says anything. FLOOD_PLATFORM_NODE_ARGS passes options to the platform's node (e.g.
// --cpu-prof); FLOOD_DATABASE names the database (default bench_load_flood). Printed with the
// platform's CPU time per flood request and the load average, beside the goal: sign-in p99 < 1 s,
// snapshot p99 < 200 ms, readiness 200 throughout, every shed answer 429/503 with Retry-After
// within 100 ms, zero 500s, and no abandoned SQL running 2 s after the flood's requests ended.
// Shed answers are timed three ways: by the platform itself (http_shed_answer_duration_seconds,
// from the request's arrival at its HTTP server to the answer handed to the socket, scraped
// before and after the round: shedTiming.ts), by an open-loop probe process beside the attacker
// (2 requests every 10 ms from the attacker's address: floodProbe.ts), and by the attacker's own
// starved clients; each client process's event-loop delay is printed with them.
// FLOOD_ADDRESSES=n spreads the attacker and the probe over the source addresses 127.0.0.2 …
// (n client addresses for the API's limits; floodHttp.ts).
import { benchDatabaseUrl, recreateDatabase } from '../shared/databases.ts';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'slonik';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { refreshRollups } from '../../src/data/history/refresh.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { hashPassword } from '../../src/api/identity/passwords.ts';
import { createUser } from '../../src/api/identity/users.ts';
import { createDatabasePool } from '../../src/shared/db/pool.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { runRound, summary, type Latencies, type RoundResult } from './floodRound.ts';
import { describeShedTiming } from './shedTiming.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLIENTS = Number(process.env.FLOOD_CLIENTS ?? 200);
const SECONDS = Number(process.env.FLOOD_SECONDS ?? 20);
const CLIENT_TIMEOUT_MS = Number(process.env.FLOOD_CLIENT_TIMEOUT_MS ?? 3000);
const BASELINE = process.env.FLOOD_BASELINE ? resolve(process.env.FLOOD_BASELINE) : undefined;
const ROUNDS = Number(process.env.FLOOD_ROUNDS ?? (BASELINE ? 3 : 1));
const DB = process.env.FLOOD_DATABASE ?? 'bench_load_flood';
const ADDRESSES = Number(process.env.FLOOD_ADDRESSES ?? 0);
const dbUrl = benchDatabaseUrl(DB);
const ACCOUNT = { email: 'flood@example.com', username: 'flood', password: 'flood passphrase' };

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
  // The rollups caught up before any round, as on a platform that has been running: otherwise the
  // first round's worker would build two years of them during its flood, and no later round's.
  while (!(await refreshRollups(pool, { timeBudgetMs: 60_000 })).caughtUp);
  await pool.query(sql.unsafe`ANALYZE`);
  const { token } = await createToken(pool, 'bench-flood', ['read']);
  // The signing-in account, made once for every round (sign-ups per address are limited).
  await createUser(pool, { ...ACCOUNT, passwordHash: await hashPassword(ACCOUNT.password) });
  return { pool, token };
}

const countsOf = (m: Map<number | string, number>) =>
  [...m].map(([status, n]) => `${status}: ${n}`).join(', ');
const tallied = (names: string[]) => {
  const counts = new Map<string, number>();
  for (const name of names) counts.set(name, (counts.get(name) ?? 0) + 1);
  return counts;
};
const total = (m: Map<number, number>) => [...m.values()].reduce((a, b) => a + b, 0);
const notReady = (m: Map<number, number>) =>
  [...m].filter(([s]) => s !== 200).reduce((sum, [, n]) => sum + n, 0);
const latency = (l: Latencies) =>
  `${l.p99} (p50 ${l.p50}, n ${l.n}; slowest at ${l.slowestAt.join(', ')} s)`;

function probeSummary(r: RoundResult): string {
  if (!r.probe) return 'no probe (clients in this process)';
  const shed = summary(r.probe.shed);
  const fast = r.probe.shed.filter(([ms]) => ms <= 100).length;
  const failed = r.probe.failed;
  const failures = failed.length
    ? `; no answer: ${countsOf(tallied(failed.map(([, name]) => name)))}, sent at ` +
      `${Math.min(...failed.map(([at]) => at)).toFixed(1)}–` +
      `${Math.max(...failed.map(([at]) => at)).toFixed(1)} s`
    : '';
  return (
    `${countsOf(new Map(Object.entries(r.probe.statuses)))}; shed p50 ${shed.p50} ms, ` +
    `p99 ${shed.p99} ms (slowest sent at ${shed.slowestAt.join(', ')} s); ${fast} of ` +
    `${shed.n} within 100 ms; ${r.probe.shedWithoutRetryAfter} without Retry-After${failures}`
  );
}

/** The measures of one round, each beside its goal. */
function measures(r: RoundResult): Array<[string, string, string]> {
  const shed = summary(r.tally.shed);
  const shedFast = r.tally.shed.filter((ms) => ms <= 100).length;
  const floodStatuses = new Map(Object.entries(r.tally.statuses));
  return [
    ['flood answers', countsOf(floodStatuses), ''],
    [
      'platform CPU per flood request',
      `${Math.round((r.platformCpuSeconds * 1e6) / r.floodRequests)} µs ` +
        `(${Math.round((r.platformCpuSeconds / SECONDS) * 100)} % of one core)`,
      '',
    ],
    ['load average (1 min) at the end', r.load[0]!.toFixed(1), ''],
    ['sign-in p99 (ms)', `${latency(r.signIn)}; ${countsOf(r.signInStatuses)}`, '< 1000'],
    ['snapshot p99, API /api/currency/all (ms)', latency(r.apiSnapshot), '< 200'],
    ['snapshot p99, data /data/currency/all (ms)', latency(r.dataSnapshot), '< 200'],
    [
      '/health/ready API: not 200',
      `${notReady(r.readiness.api)} of ${total(r.readiness.api)}`,
      '0',
    ],
    [
      '/health/ready data: not 200',
      `${notReady(r.readiness.data)} of ${total(r.readiness.data)}`,
      '0',
    ],
    [
      "shed answers, the platform's own time (arrival to socket)",
      describeShedTiming(r.platformShed),
      'all within 100 ms',
    ],
    ['shed answers to the open-loop probe (end to end)', probeSummary(r), 'all with Retry-After'],
    [
      "shed answers to the attacker's clients (end to end)",
      `${shed.n}; p50 ${shed.p50} ms, p99 ${shed.p99} ms; ${shedFast} within 100 ms; ` +
        `${r.tally.shedWithoutRetryAfter} without Retry-After`,
      'all with Retry-After',
    ],
    [
      'event-loop delay p99 / max (ms): attacker; probe',
      `${r.tally.loopDelay.p99} / ${r.tally.loopDelay.max}; ` +
        (r.probe ? `${r.probe.loopDelay.p99} / ${r.probe.loopDelay.max}` : 'no probe'),
      '',
    ],
    [
      'platform event-loop delay p99 / max (ms)',
      `${r.platformLoopDelay.p99} / ${r.platformLoopDelay.max}`,
      '',
    ],
    [
      "API's accept queue: largest; samples with connections waiting",
      `${r.acceptQueue.largest}; ${r.acceptQueue.waiting} of ${r.acceptQueue.samples}`,
      '',
    ],
    ['connections dropped on a full accept queue (machine-wide)', String(r.listenOverflows), '0'],
    ['500s, or no answer to a measuring client', String(r.s500), '0'],
    ['abandoned SQL running 2 s after the requests ended', String(r.abandoned.length), '0'],
  ];
}

/** The flood scenario: one round, or baseline and this checkout alternately, side by side. */
export async function runFlood() {
  const { pool, token } = await prepareDatabase();
  const sides = BASELINE
    ? [
        { name: `baseline (${BASELINE})`, platformRoot: BASELINE },
        { name: 'this checkout', platformRoot: root },
      ]
    : [{ name: 'this checkout', platformRoot: root }];
  const results: Array<{ name: string; result: RoundResult }> = [];
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      for (const side of sides) {
        const result = await runRound({
          platformRoot: side.platformRoot,
          node: join(root, 'node_modules', '.bin', 'node'),
          dbUrl,
          pool,
          token,
          account: { email: ACCOUNT.email, password: ACCOUNT.password },
          clients: CLIENTS,
          seconds: SECONDS,
          clientTimeoutMs: CLIENT_TIMEOUT_MS,
          addresses: ADDRESSES,
          clientsInProcess: process.env.FLOOD_CLIENTS_PROCESS === 'same',
          platformNodeArgs: (process.env.FLOOD_PLATFORM_NODE_ARGS ?? '').split(' ').filter(Boolean),
        });
        const name = `${side.name}, round ${round}`;
        results.push({ name, result });
        process.stderr.write(
          `${name}: sign-in p99 ${result.signIn.p99} ms, snapshots p99 ` +
            `${result.apiSnapshot.p99} / ${result.dataSnapshot.p99} ms\n`,
        );
      }
    }
  } finally {
    await pool.end();
  }
  console.log(
    `\n${CLIENTS} anonymous clients for ${SECONDS} s (each gives up after ${CLIENT_TIMEOUT_MS} ms), ` +
      `from ${ADDRESSES > 0 ? `${ADDRESSES} addresses` : 'one address'}, against platform start --role all\n`,
  );
  const table = results.map(({ result }) => measures(result));
  console.log(`| measure | ${results.map((r) => r.name).join(' | ')} | goal |`);
  console.log(`|---|${results.map(() => '---|').join('')}---|`);
  for (const [i, [name, , goal]] of table[0]!.entries()) {
    console.log(`| ${name} | ${table.map((rows) => rows[i]![1]).join(' | ')} | ${goal} |`);
  }
  for (const { name, result } of results) {
    for (const row of result.abandoned) console.log(`${name}, still running:`, JSON.stringify(row));
  }
}
