// Before and after: the history routes of a baseline commit and of this tree, side by side.
//
//   npm run bench:history:compare -- --baseline <git ref> [--requests 100] [--currencies 50]
//                                    [--cache-mb <HISTORY_CACHE_MB for both>]
//                                    [--baseline-database <url>]
//
// Checks the baseline out into a temporary worktree (sharing this tree's node_modules), starts
// both data modules on the bench:history database, and sends each request to one then the
// other, alternating which goes first, so both see the same machine at the same moment. On a
// virtual machine whose speed drifts by ±30 % between runs, this is the fair way to tell
// whether a change helped. Needs the data of `npm run bench:history` (run that first, with the
// same --currencies). --cache-mb 0 measures every request as a first one (no run kept in memory).
// A baseline whose schema differs from this tree's (levels added or dropped by a later migration)
// cannot read this tree's database: give it a database of its own with --baseline-database,
// prepared by the baseline's own `bench:history` (same --currencies and --days; the generated
// prices are random, so the answers match in size and shape, not byte for byte). Cases the
// baseline does not serve (a 4xx: an interval or zone it did not accept yet) are listed apart.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { loadConfig } from '../../src/shared/config.ts';
import { createDatabasePool, type DatabasePool } from '../../src/shared/db/pool.ts';
import { startDataProcess, type DataProcess } from './dataProcess.ts';
import { BENCH_CODES, countRows } from './generate.ts';
import { formatSummary, summarize } from './percentiles.ts';

const QUERIES = [
  'currency/history/{code}?hours=24&intervalSeconds=60',
  'currency/history/{code}?hours=168&intervalSeconds=300',
  'currency/history/{code}?hours=720&intervalSeconds=3600',
  'currency/history/{code}?hours=8760&intervalSeconds=3600',
  'currency/history/{code}?hours=8760&intervalSeconds=86400',
  'currency/history/{code}?hours=6&intervalSeconds=7',
  'candles/{code}?hours=8760&interval=1h',
  'candles/{code}?hours=8760&interval=1d&tz=Europe/Berlin&fill=previous',
  'candles/{code}?hours=720&interval=4h&tz=America/New_York&fill=linear',
  'candles/{code}?hours=168&interval=90',
  'candles/{code}?hours=2160&interval=15m',
  'candles/{code}?hours=8760&interval=4h',
  'candles/{code}?hours=8760&interval=1d&tz=Asia/Kolkata',
  'candles/{code}?hours=8760&interval=1d&tz=Asia/Kathmandu',
  'candles/{code}?hours=8760&interval=1d&tz=America/St_Johns',
  'candles/{code}?hours=4320&interval=30m',
  'candles/{code}?hours=720&interval=5m',
];

const { values: args } = parseArgs({
  options: {
    baseline: { type: 'string' },
    requests: { type: 'string', default: '100' },
    currencies: { type: 'string', default: String(BENCH_CODES.length) },
    'cache-mb': { type: 'string' },
    'baseline-database': { type: 'string' },
  },
});
if (!args.baseline) {
  process.stderr.write('usage: npm run bench:history:compare -- --baseline <git ref>\n');
  process.exit(2);
}

const root = new URL('../..', import.meta.url).pathname;
const databaseUrl = loadConfig({
  DATABASE_URL: process.env.BENCH_DATABASE_URL ?? 'postgres://127.0.0.1:5432/bench_history',
}).DATABASE_URL;
const baselineDatabaseUrl = args['baseline-database']
  ? loadConfig({ DATABASE_URL: args['baseline-database'] }).DATABASE_URL
  : databaseUrl;
const log = (line: string) => process.stdout.write(`${line}\n`);

/** A data module under comparison and the read token of its database. */
interface Side {
  server: DataProcess;
  token: string;
}

async function timedGet({ server, token }: Side, path: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${server.url}/data/${path}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const body = await response.text();
  if (response.status !== 200) throw new Error(`HTTP ${response.status} for ${path}: ${body}`);
  return performance.now() - started;
}

/** The baseline's refusal of a request (4xx), or undefined when it answers it. */
async function refusal({ server, token }: Side, path: string): Promise<string | undefined> {
  const response = await fetch(`${server.url}/data/${path}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const body = await response.text();
  if (response.status >= 400 && response.status < 500) return `${response.status} ${body}`;
  return undefined;
}

/** A read token in the database at `url` (a no-op pool when it is the one already open). */
async function readToken(url: string, open: DatabasePool): Promise<string> {
  const pool = url === databaseUrl ? open : await createDatabasePool(url);
  try {
    if ((await countRows(pool)) === 0)
      throw new Error(`no data in ${url}: run \`npm run bench:history\` on it first`);
    return (await createToken(pool, `compare-${Date.now()}`, ['read'])).token;
  } finally {
    if (pool !== open) await pool.end();
  }
}

async function main() {
  const pool = await createDatabasePool(databaseUrl);
  const worktree = mkdtempSync(join(tmpdir(), 'history-baseline-'));
  const servers: DataProcess[] = [];
  try {
    const token = await readToken(databaseUrl, pool);
    const baselineToken = await readToken(baselineDatabaseUrl, pool);
    execFileSync('git', ['-C', root, 'worktree', 'add', '--detach', worktree, args.baseline!], {
      stdio: 'ignore',
    });
    symlinkSync(join(root, 'node_modules'), join(worktree, 'node_modules'));
    const env: Record<string, string> =
      args['cache-mb'] === undefined ? {} : { HISTORY_CACHE_MB: args['cache-mb'] };
    const codes = BENCH_CODES.slice(0, Number(args.currencies));
    const baselineServer = await startDataProcess(
      baselineDatabaseUrl,
      join(worktree, 'bin/platform.mjs'),
      env,
    );
    servers.push(baselineServer);
    const currentServer = await startDataProcess(databaseUrl, undefined, env);
    servers.push(currentServer);
    const baseline: Side = { server: baselineServer, token: baselineToken };
    const current: Side = { server: currentServer, token };
    const refused: string[] = [];
    const requests = Number(args.requests);
    log(
      `| request | ${args.baseline} p50 / p95 (ms) | this tree p50 / p95 (ms) | data module CPU per request, ${args.baseline} / this tree (ms) |`,
    );
    log('|---|---:|---:|---:|');
    for (const query of QUERIES) {
      const refusedBecause = await refusal(baseline, query.replace('{code}', codes[0]!));
      if (refusedBecause) {
        refused.push(`\`${query}\`: ${refusedBecause.slice(0, 200)}`);
        continue;
      }
      const times = { baseline: [] as number[], current: [] as number[] };
      const sides = [baseline, current];
      const cpuBefore = sides.map((side) => side.server.cpuMs());
      for (let i = -5; i < requests; i++) {
        const path = query.replace('{code}', codes[(i + 5) % codes.length]!);
        const order =
          i % 2 === 0 ? (['baseline', 'current'] as const) : (['current', 'baseline'] as const);
        for (const which of order) {
          const elapsed = await timedGet(which === 'baseline' ? baseline : current, path);
          if (i >= 0) times[which].push(elapsed);
        }
      }
      const [before, after] = [summarize(times.baseline), summarize(times.current)];
      // Per request sent, warm-ups included; the machine's noise moves this far less.
      const cpu = sides.map((side, i) =>
        ((side.server.cpuMs() - cpuBefore[i]!) / (requests + 5)).toFixed(1),
      );
      log(
        `| \`${query}\` | ${formatSummary(before)} | ${formatSummary(after)} | ${cpu.join(' / ')} |`,
      );
    }
    if (refused.length > 0) log(`\nNot served by ${args.baseline}:\n${refused.join('\n')}`);
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    await pool.end();
    execFileSync('git', ['-C', root, 'worktree', 'remove', '--force', worktree], {
      stdio: 'ignore',
    });
    rmSync(worktree, { recursive: true, force: true });
  }
}

await main();
