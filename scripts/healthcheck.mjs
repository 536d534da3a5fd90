#!/usr/bin/env node
// Container health probe (the image's HEALTHCHECK and docker-compose's healthchecks). Given URLs,
// every one must answer 2xx. Without arguments it probes the readiness of every port the platform
// may listen on (data, API, the health/metrics listener of a worker or an API): at least one must
// answer and every one that answers must be ready, so one image serves every role.
import { loadConfig } from '../src/shared/config.ts';

const TIMEOUT_MS = 4000;

/** @param {string} url */
async function probe(url) {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    return { url, answered: true, ok: response.ok, status: String(response.status) };
  } catch (error) {
    const failure = /** @type {Error & { cause?: { code?: string } }} */ (error);
    return { url, answered: false, ok: false, status: failure.cause?.code ?? failure.name };
  }
}

function defaultUrls() {
  const config = loadConfig();
  return [config.DATA_PORT, config.API_PORT, config.WORKER_METRICS_PORT].map(
    (port) => `http://127.0.0.1:${port}/health/ready`,
  );
}

const explicit = process.argv.slice(2);
const results = await Promise.all((explicit.length ? explicit : defaultUrls()).map(probe));
const considered = explicit.length ? results : results.filter((r) => r.answered);
const healthy = considered.length > 0 && considered.every((r) => r.ok);
for (const r of results) process.stdout.write(`${r.ok ? 'ok  ' : 'FAIL'} ${r.url} ${r.status}\n`);
process.exit(healthy ? 0 : 1);
