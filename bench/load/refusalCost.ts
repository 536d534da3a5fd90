// bench:load --refusal-cost — what one refused request costs the API: an address already over the
// anonymous history limit (API_RATE_LIMIT_ANONYMOUS=1, spent before the measurement) fires
// REFUSAL_CONNECTIONS (default 100) keep-alive connections at /api/currency/history/BTC for
// REFUSAL_SECONDS (default 10), from an autocannon child process; every answer is a 429. Printed:
// requests, req/s, p99 latency and the API process's CPU time per refused request (user + system,
// from process.cpuUsage), which depends little on what else runs on the machine. The data module
// is not started: a refused request never reaches it. A baseline commit is measured by running
// this file from a checkout of it (the file imports the code beside it).
import { benchDatabaseUrl, recreateDatabase } from '../shared/databases.ts';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createApiService } from '../../src/api/service.ts';
import { loadConfig } from '../../src/shared/config.ts';
import { listen } from '../../src/shared/http/server.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { createRuntime } from '../../src/shared/runtime.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CONNECTIONS = Number(process.env.REFUSAL_CONNECTIONS ?? 100);
const SECONDS = Number(process.env.REFUSAL_SECONDS ?? 10);
const DB = process.env.REFUSAL_DATABASE ?? 'bench_load_refusal';
const dbUrl = benchDatabaseUrl(DB);

interface AutocannonResult {
  requests: { total: number; average: number };
  latency: { p50: number; p99: number };
  statusCodeStats?: Record<string, { count: number }>;
}

/** autocannon in a child process, so its CPU time is not counted as the API's. */
async function fire(url: string): Promise<AutocannonResult> {
  const child = spawn(
    join(root, 'node_modules', '.bin', 'autocannon'),
    ['--json', '-c', String(CONNECTIONS), '-d', String(SECONDS), url],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await once(child, 'exit');
  return JSON.parse(output) as AutocannonResult;
}

export async function runRefusalCost() {
  await recreateDatabase(DB);
  const config = loadConfig({
    DATABASE_URL: dbUrl,
    LOG_LEVEL: 'error',
    PLATFORM_LOAD_CURRENCIES: 'false',
    API_RATE_LIMIT_ANONYMOUS: '1',
    SESSION_KEYS: 'bench-refusal-session-key-0123456789abcdef01',
  });
  const runtime = await createRuntime(config, createLogger('error'));
  // Port 9 (discard): nothing listens, and no refused request gets that far.
  const service = createApiService(runtime, { dataUrl: 'http://127.0.0.1:9', dataToken: 'none' });
  const api = await listen(service.app, '127.0.0.1', 0);
  const url = `${api.url}/api/currency/history/BTC?hours=1&intervalSeconds=60`;
  try {
    // Spend the address's budget (that one request fails on the absent data module).
    await (await fetch(url)).arrayBuffer();
    const probe = await fetch(url);
    await probe.arrayBuffer();
    if (probe.status !== 429)
      throw new Error(`expected 429 once over the limit, got ${probe.status}`);
    const before = process.cpuUsage();
    const result = await fire(url);
    const cpu = process.cpuUsage(before);
    const cpuMs = (cpu.user + cpu.system) / 1000;
    const statuses = Object.entries(result.statusCodeStats ?? {})
      .map(([status, { count }]) => `${status}: ${count}`)
      .join(', ');
    console.log(
      `\n${CONNECTIONS} connections for ${SECONDS} s at an address over the anonymous history limit\n`,
    );
    console.log(
      '| requests | answers | req/s | p50 ms | p99 ms | API CPU, s | API CPU per request, µs |',
    );
    console.log('|---|---|---|---|---|---|---|');
    console.log(
      `| ${result.requests.total} | ${statuses} | ${Math.round(result.requests.average)} | ` +
        `${result.latency.p50} | ${result.latency.p99} | ${(cpuMs / 1000).toFixed(1)} | ` +
        `${Math.round((cpuMs * 1000) / result.requests.total)} |`,
    );
  } finally {
    await api.close(1000);
    await runtime.close();
  }
}
