import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { enqueueJob } from '../../src/worker/jobs.ts';
import { startWorkerRunner } from '../../src/worker/start.ts';
import { spawnCli, waitForExit } from '../support/cli.ts';
import { parseMetrics, sampleValue } from '../support/prometheus.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { valueOf } from '../support/wait.ts';

// SIGTERM in a real `platform start` process: readiness turns 503 first, the listener closes
// after the drain, a request already in flight still gets its complete answer, then the process
// exits 0. The in-flight request is an upload whose body arrives slowly (koa-body waits for all of
// it before routing), which holds a request open without any test-only route.

let runtime: TestRuntime;

beforeAll(async () => {
  runtime = await createTestRuntime({ SHUTDOWN_GRACE_SECONDS: '1' });
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
});

const children: ChildProcessWithoutNullStreams[] = [];

afterAll(async () => {
  // A failed expectation must not leave a platform process behind.
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await runtime.dispose();
});

interface SlowUpload {
  /** Sends the rest of the body. */
  finish(): void;
  response: Promise<{ status: number; body: string }>;
}

function startSlowUpload(url: string): SlowUpload {
  const body = JSON.stringify({ padding: 'x'.repeat(4096) });
  const request = http.request(`${url}/data/currency/all`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
  });
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    request.on('response', (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', reject);
    });
    request.on('error', reject);
  });
  request.write(body.slice(0, 100));
  return { finish: () => request.end(body.slice(100)), response };
}

const waitFor = <T>(what: string, probe: () => Promise<T | undefined>, ms = 60_000) =>
  valueOf(probe, ms, what);

async function inFlight(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const active = sampleValue(parseMetrics(text), 'http_server_active_requests', {
    service: 'data',
  });
  return (active ?? 0) - 1; // the scrape itself is one of the active requests
}

async function startData(env: Record<string, string>) {
  const started = await spawnCli(
    ['start', '--role', 'data', '--platform.load.currency=false'],
    { DATABASE_URL: runtime.database.url, DATA_PORT: '0', ...env },
    /platform is running[^\n]*\n\s+data\s+http:\S+\n/,
  );
  children.push(started.child);
  const url = /data\s+(http:\/\/\S+)/.exec(started.output())![1]!;
  return { ...started, url };
}

describe('SIGTERM on the data role', () => {
  test('readiness 503 during the drain, listener closed after it, in-flight request answered, exit 0', async () => {
    const { child, url } = await startData({
      SHUTDOWN_DRAIN_SECONDS: '3',
      SHUTDOWN_GRACE_SECONDS: '30',
    });
    expect((await fetch(`${url}/health/ready`)).status).toBe(200);
    const upload = startSlowUpload(url);
    await waitFor('the upload to be in flight', async () =>
      (await inFlight(url)) >= 1 ? true : undefined,
    );

    child.kill('SIGTERM');
    const ready = await waitFor('readiness to turn 503 for the shutdown', async () => {
      const response = await fetch(`${url}/health/ready`);
      const body = (await response.json()) as { status: string; checks: Record<string, string> };
      return response.status === 503 && body.checks.shutdown === 'draining' ? body : undefined;
    });
    expect(ready.status).toBe('DOWN');
    expect(child.exitCode).toBeNull();

    // After the drain the listener is closed to newcomers ...
    await waitFor('the listener to close', async () => {
      try {
        await fetch(`${url}/health/live`, { signal: AbortSignal.timeout(1000) });
        return undefined;
      } catch {
        return true;
      }
    });
    // ... while the request already in flight still gets its full answer.
    expect(child.exitCode).toBeNull();
    upload.finish();
    const answer = await upload.response;
    expect(answer.status).toBe(405); // the route takes GET only: a complete, ordinary answer
    expect(await waitForExit(child)).toBe(0);
  });

  test('a second signal exits at once, without waiting for in-flight work', async () => {
    const { child, url } = await startData({ SHUTDOWN_GRACE_SECONDS: '60' });
    const upload = startSlowUpload(url);
    upload.response.catch(() => {}); // cut off by the forced exit
    await waitFor('the upload to be in flight', async () =>
      (await inFlight(url)) >= 1 ? true : undefined,
    );
    child.kill('SIGTERM');
    await waitFor('the first signal to be handled', async () => {
      try {
        const response = await fetch(`${url}/health/ready`, { signal: AbortSignal.timeout(1000) });
        return response.status === 503 ? true : undefined;
      } catch {
        return true; // past the drain: the listener is closed
      }
    });
    expect(child.exitCode).toBeNull(); // still waiting for the upload (grace: 60 s)
    const started = Date.now();
    child.kill('SIGTERM');
    expect(await waitForExit(child)).toBe(1);
    expect(Date.now() - started).toBeLessThan(20_000);
    await expect(upload.response).rejects.toThrow();
  });
});

describe('worker runner stop is bounded by SHUTDOWN_GRACE_SECONDS', () => {
  const jobRow = z.object({
    attempts: z.number(),
    locked: z.boolean(),
    lastError: z.string().nullable(),
  });
  const jobState = (task: string) =>
    runtime.pool.maybeOne(sql.type(jobRow)`
      SELECT attempts, locked_at IS NOT NULL AS locked, last_error AS "lastError"
      FROM graphile_worker.jobs WHERE task_identifier = ${task}
    `);
  const started = (task: string) => async () => ((await jobState(task))?.locked ? true : undefined);

  test('a job shorter than the grace finishes before stop() returns', async () => {
    let finished = false;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const runner = await startWorkerRunner(runtime, {
      taskList: {
        // Still running when the stop begins: it ends only once the runner is shutting down.
        ops_short: async () => {
          await gate;
          finished = true;
        },
      },
    });
    runner.events.once('pool:gracefulShutdown', () => release());
    await enqueueJob(runtime.pool, 'ops_short', {});
    await waitFor('the job to start', started('ops_short'));
    await runner.stop();
    expect(finished).toBe(true);
    // Its completion is recorded before stop() returns: the pools may close right after.
    expect(await jobState('ops_short')).toBeNull();
  });

  test('a job outliving the grace is failed so another worker retries it at once', async () => {
    const runner = await startWorkerRunner(runtime, {
      taskList: {
        // Ignores the abort signal, as a task stuck in a call without time-out would.
        ops_stuck: () => sleep(60_000, undefined, { ref: false }),
      },
    });
    await enqueueJob(runtime.pool, 'ops_stuck', {}, { maxAttempts: 5 });
    await waitFor('the job to start', started('ops_stuck'));
    const stopAt = Date.now();
    await runner.stop();
    expect(Date.now() - stopAt).toBeLessThan(15_000);
    const job = await jobState('ops_stuck');
    expect(job).toMatchObject({ attempts: 1, locked: false });
    expect(job?.lastError).toMatch(/shutdown grace exceeded/);
  });
});
