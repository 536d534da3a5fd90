// History through a physical streaming replica beside the primary, in one run.
//
//   npm run bench:replica [-- --currencies 5 --days 30 --requests 60 --seconds 20 --concurrency 8]
//
// Uses its own database (BENCH_DATABASE_URL, default postgres://127.0.0.1:5432/bench_replica),
// generates the history once (kept between runs), makes a streaming replica of the server with
// pg_basebackup (as the test setup does: root on Debian) and removes it at the end. Two data
// modules run in their own processes with the history cache off (every request reads the
// database): one reading from the primary, one with READ_DATABASE_URL naming the replica.
// Latency: the bench:history cases, requests alternated between the two. Throughput: requests at
// a fixed concurrency for a fixed time against two data modules reading the primary, then against
// one reading the primary and one reading the replica.
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { refreshRollups } from '../../src/data/history/refresh.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { loadConfig } from '../../src/shared/config.ts';
import { ensureDatabase } from '../../src/shared/db/ensureDatabase.ts';
import { migrate } from '../../src/shared/db/migrate.ts';
import { createDatabasePool } from '../../src/shared/db/pool.ts';
import { replicaUrl } from '../../test/support/replica.ts';
import { createStreamingReplica, removeReplica } from '../../test/support/streamingReplica.ts';
import { ADMIN_URL } from '../../test/support/database.ts';
import { startDataProcess, type DataProcess } from '../history/dataProcess.ts';
import { BENCH_CODES, generateHistory } from '../history/generate.ts';
import { formatSummary, summarize } from '../history/percentiles.ts';

const CASES: Array<[hours: number, intervalSeconds: number]> = [
  [24, 60],
  [168, 300],
  [720, 3600],
];

const { values: args } = parseArgs({
  options: {
    currencies: { type: 'string', default: '5' },
    days: { type: 'string', default: '30' },
    requests: { type: 'string', default: '60' },
    seconds: { type: 'string', default: '20' },
    concurrency: { type: 'string', default: '8' },
  },
});
const log = (line: string) => process.stdout.write(`${line}\n`);
const codes = BENCH_CODES.slice(0, Number(args.currencies));

async function request(server: DataProcess, token: string, path: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${server.url}${path}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`${path}: ${response.status}`);
  return performance.now() - started;
}

/** Requests per second from `concurrency` loops over the servers in turn, for `seconds`. */
async function throughput(servers: DataProcess[], token: string, path: (i: number) => string) {
  const until = performance.now() + Number(args.seconds) * 1000;
  let done = 0;
  const loop = async (worker: number) => {
    for (let i = worker; performance.now() < until; i += 1) {
      await request(servers[i % servers.length]!, token, path(i));
      done += 1;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: Number(args.concurrency) }, (_, w) => loop(w)));
  return done / ((performance.now() - started) / 1000);
}

async function main() {
  const url = loadConfig({
    DATABASE_URL: process.env.BENCH_DATABASE_URL ?? 'postgres://127.0.0.1:5432/bench_replica',
  }).DATABASE_URL;
  await ensureDatabase(url);
  await migrate(url);
  const pool = await createDatabasePool(url);
  log(`history: ${codes.length} currencies × ${args.days} days of minutes`);
  await generateHistory(pool, codes, Number(args.days), log);
  await refreshRollups(pool, { settleSeconds: 120 });
  const token = (await createToken(pool, `bench-replica-${Date.now()}`, ['read'])).token;
  log('making the replica (pg_basebackup)…');
  const replica = await createStreamingReplica(ADMIN_URL);
  const env = { HISTORY_CACHE_MB: '0', HISTORY_MAX_CONCURRENT: '16', ADMISSION_QUEUE_LENGTH: '64' };
  const servers: DataProcess[] = [];
  try {
    const database = new URL(url).pathname.slice(1);
    const routed = { ...env, READ_DATABASE_URL: replicaUrl(replica, database) };
    const [primaryA, primaryB, onReplica] = await Promise.all([
      startDataProcess(url, undefined, env),
      startDataProcess(url, undefined, env),
      startDataProcess(url, undefined, routed),
    ]);
    servers.push(primaryA, primaryB, onReplica);
    await waitForReplicaInUse(onReplica);
    log(
      `load average before: ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    log('\n| case | primary p50 / p95 ms | replica p50 / p95 ms | replica / primary p50 |');
    log('|---|---|---|---|');
    for (const [hours, seconds] of CASES) {
      const times = { primary: [] as number[], replica: [] as number[] };
      for (let i = 0; i < Number(args.requests) + 3; i++) {
        const path = `/data/currency/history/${codes[i % codes.length]}?hours=${hours}&intervalSeconds=${seconds}`;
        const [a, b] = i % 2 ? [primaryA, onReplica] : [onReplica, primaryA];
        const ta = await request(a, token, path);
        const tb = await request(b, token, path);
        if (i < 3) continue; // warm-up
        times[a === primaryA ? 'primary' : 'replica'].push(ta);
        times[b === primaryA ? 'primary' : 'replica'].push(tb);
      }
      const [p, r] = [summarize(times.primary), summarize(times.replica)];
      log(
        `| ${hours} h @ ${seconds} s | ${formatSummary(p)} | ${formatSummary(r)} | ${(r.p50 / p.p50).toFixed(2)} |`,
      );
    }
    const path = (i: number) =>
      `/data/currency/history/${codes[i % codes.length]}?hours=168&intervalSeconds=300`;
    const alone = await throughput([primaryA, primaryB], token, path);
    const both = await throughput([primaryA, onReplica], token, path);
    log(`\nthroughput, 168 h @ 300 s, ${args.concurrency} connections, ${args.seconds} s each:`);
    log(`  two data modules on the primary:               ${alone.toFixed(1)} req/s`);
    log(`  one on the primary, one on the replica:        ${both.toFixed(1)} req/s`);
    log(
      `load average after: ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    await removeReplica(replica, ADMIN_URL);
    await pool.end();
  }
}

async function waitForReplicaInUse(server: DataProcess) {
  for (let waited = 0; waited < 300_000; waited += 500) {
    const health = (await (await fetch(`${server.url}/health/ready`)).json()) as {
      details?: { replicas?: { replicas: Array<{ inUse: boolean }> } };
    };
    if (health.details?.replicas?.replicas[0]?.inUse) return;
    await new Promise((resolve) => setTimeout(resolve, 500)); // the probe's cadence
  }
  throw new Error('the replica never came into use');
}

await main();
