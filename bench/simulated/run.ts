// bench:simulated — what a newcomer's first start costs: `platform start` on a freshly created
// database (migrations, currency list, the simulated-history job in the background), then
// /data/candles/<code>?interval=1h&hours=720 polled until every currency of the list answers 720
// candles. Prints the seconds beside the 120 s goal, the job's own seconds (from its log), the
// load average, and how the history joins the live prices (largest one-minute move across the
// joint against the typical one).
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { benchDatabaseUrl, createEmptyDatabase, dropBenchDatabase } from '../shared/databases.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const GOAL_SECONDS = 120;
const HOURS = 720;
const DB = 'bench_simulated_history';
const dbUrl = benchDatabaseUrl(DB);
const port = 20_000 + (process.pid % 20_000);

interface Candle {
  timestamp: string;
  close: number;
}

async function main() {
  await createEmptyDatabase(DB);
  const load = loadavg().map((n) => n.toFixed(1));
  const started = Date.now();
  const child = spawn(process.execPath, [join(root, 'bin/platform.mjs'), 'start'], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: dbUrl,
      DATA_PORT: String(port),
      API_PORT: String(port + 1),
      WORKER_METRICS_PORT: String(port + 2),
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let jobSeconds: number | null = null;
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    const done = /"seconds":([\d.]+)[^\n]*simulated history: loaded/.exec(output);
    if (done) jobSeconds = Number(done[1]);
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  try {
    await waitFor(() => (/platform is running/.test(output) ? true : undefined), 120_000);
    // `platform start` shows its token only on a terminal: make one as an operator would.
    const created = execFileSync(
      process.execPath,
      [
        join(root, 'bin/platform.mjs'),
        'token',
        'create',
        '--name',
        'bench',
        '--scope',
        'read',
        '--json',
      ],
      { env: { ...process.env, DATABASE_URL: dbUrl, LOG_LEVEL: 'warn' } },
    );
    const token = (JSON.parse(created.toString()) as { token: string }).token;
    const base = `http://127.0.0.1:${port}`;
    const get = async <T>(path: string): Promise<T> => {
      const response = await fetch(base + path, { headers: { authorization: `Bearer ${token}` } });
      if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
      return (await response.json()) as T;
    };
    const codes = await currencyCodes();
    const candles = (code: string) =>
      get<Candle[]>(`/data/candles/${code}?interval=1h&hours=${HOURS}`);

    await waitFor(async () => (await candles('BTC')).length >= HOURS || undefined, 600_000);
    const btcSeconds = (Date.now() - started) / 1000;
    let pending = codes;
    while (pending.length > 0) {
      const counts = await inTurns(pending, async (code) => (await candles(code)).length);
      pending = pending.filter((_, i) => counts[i]! < HOURS);
      if (pending.length > 0) await sleep(1000);
    }
    const allSeconds = (Date.now() - started) / 1000;
    const counts = await inTurns(codes, async (code) => (await candles(code)).length);
    const joint = await jointMoves(get);

    console.log(`bench:simulated — first start on a fresh database, ${codes.length} currencies`);
    console.log(`load average at start (1, 5, 15 min): ${load.join(', ')}`);
    console.log(`BTC answers ${HOURS} hourly candles after  ${btcSeconds.toFixed(1)} s`);
    console.log(
      `every currency answers ≥ ${HOURS} after     ${allSeconds.toFixed(1)} s   (goal ≤ ${GOAL_SECONDS} s: ${allSeconds <= GOAL_SECONDS ? 'met' : 'MISSED'})`,
    );
    console.log(`candles per currency: min ${Math.min(...counts)}, max ${Math.max(...counts)}`);
    console.log(`the background job itself (log):         ${jobSeconds ?? '?'} s`);
    console.log(
      `BTC one-minute closes around the joint: largest move ${joint.atJoint}, median move elsewhere ${joint.median}`,
    );
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
    await dropBenchDatabase(DB);
  }
}

/** Every currency of the list (the data role installed it before it printed the token). */
async function currencyCodes(): Promise<string[]> {
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ code: string }>('SELECT code FROM currencies');
    return rows.map((r) => r.code);
  } finally {
    await client.end();
  }
}

/** Relative one-minute moves of BTC's closes 20 minutes either side of where history ends. */
async function jointMoves(get: <T>(path: string) => Promise<T>) {
  const connection = new pg.Client({ connectionString: dbUrl });
  await connection.connect();
  const { rows } = await connection.query<{ until: Date }>(
    // History candles span a range (inner samples); harvested prices are single ticks.
    `SELECT max(time) + interval '1 minute' AS until FROM price_observations
      WHERE currency_code = 'BTC' AND high <> low`,
  );
  await connection.end();
  const until = rows[0]!.until.getTime();
  const from = new Date(until - 20 * 60_000).toISOString();
  const to = new Date(Math.min(Date.now(), until + 20 * 60_000)).toISOString();
  const minute = await get<Candle[]>(`/data/candles/BTC?interval=1m&from=${from}&to=${to}`);
  const moves = minute.slice(1).map((c, i) => Math.abs(c.close / minute[i]!.close - 1));
  const jointIndex = minute.findIndex((c) => Date.parse(c.timestamp) >= until);
  const atJoint = jointIndex > 0 ? moves[jointIndex - 1]! : NaN;
  const sorted = [...moves].sort((a, b) => a - b);
  const pct = (x: number) => `${(x * 100).toFixed(4)} %`;
  return { atJoint: pct(atJoint), median: pct(sorted[Math.floor(sorted.length / 2)] ?? NaN) };
}

async function waitFor<T>(probe: () => T | undefined | Promise<T | undefined>, ms: number) {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(1000);
  }
}

await main();

/**
 * Maps in two lanes, as a polite client does: the candle route admits two requests at a time
 * (CANDLES_MAX_CONCURRENT default) and sheds a burst of 136 with 503.
 */
async function inTurns<T, R>(items: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!);
    }
  };
  await Promise.all([lane(), lane()]);
  return results;
}
