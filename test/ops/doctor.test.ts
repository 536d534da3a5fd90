import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { enqueueJob } from '../../src/worker/jobs.ts';
import { runCli, spawnCli, waitForExit } from '../support/cli.ts';
import { setSnapshot } from '../support/prices.ts';
import { parseMetrics } from '../support/prometheus.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { until } from '../support/wait.ts';

// `platform doctor` against a working platform (a real worker process, fresh prices) and against
// broken ones, as an operator would run it.

let runtime: TestRuntime;
let env: Record<string, string>;

interface Report {
  healthy: boolean;
  checks: { name: string; ok: boolean; detail: string; fix?: string }[];
}

const doctorJson = async () => {
  const result = await runCli(['doctor', '--json'], env);
  return { code: result.code, report: JSON.parse(result.stdout) as Report };
};
async function waitForFreshPrices() {
  const fresh = z.object({ n: z.number() });
  await until(
    async () =>
      (
        await runtime.pool.one(sql.type(fresh)`
          SELECT count(*)::int AS n FROM currency_snapshots
          WHERE observed_at > now() - interval '1 minute'
        `)
      ).n > 0,
    60_000,
    'the worker to price something',
  );
}
const byName = (report: Report) => Object.fromEntries(report.checks.map((c) => [c.name, c]));

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  env = { DATABASE_URL: runtime.database.url };
});

afterAll(async () => {
  await runtime.dispose();
});

describe('a healthy platform', () => {
  test('with a worker running and fresh prices every check passes and doctor exits 0', async () => {
    const { child, output } = await spawnCli(
      ['start', '--role', 'worker', '--platform.load.currency=false'],
      { ...env, WORKER_METRICS_PORT: '0' },
      /ops\s+http:\S+\n/,
    );
    try {
      // A worker on its own serves probes and metrics on its health listener.
      const opsUrl = /ops\s+(http:\/\/\S+)/.exec(output())![1]!;
      const ready = await fetch(`${opsUrl}/health/ready`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({
        status: 'UP',
        checks: { database: 'ok', worker: 'ok' },
      });
      const metrics = parseMetrics(await (await fetch(`${opsUrl}/metrics`)).text());
      expect(
        metrics.filter((s) => s.name === 'worker_queue_depth').map((s) => s.labels.state),
      ).toEqual(expect.arrayContaining(['ready', 'scheduled', 'running', 'failed']));

      // The worker harvests the (simulated) market: wait for its first prices.
      await waitForFreshPrices();
      const { code, report } = await doctorJson();
      expect(report.checks.filter((c) => !c.ok)).toEqual([]);
      expect(report.healthy).toBe(true);
      expect(code).toBe(0);
      expect(report.checks.map((c) => c.name)).toEqual(
        expect.arrayContaining([
          'database',
          'timescaledb',
          'edition',
          'migrations',
          'workers',
          'jobs',
          'feed',
        ]),
      );
      expect(byName(report).workers!.detail).toMatch(/^1 live \(\S+\/\d+\)$/);
      expect(byName(report).feed!.detail).toMatch(/newest price \d+ s old; (\d+) of \1 currencies/);
      expect(byName(report).worker!.detail).toMatch(/the harvest ticker has a leader/);

      const human = await runCli(['doctor'], env);
      expect(human.code).toBe(0);
      expect(human.stdout).toMatch(/^ok\s+workers\s+1 live/m);
      expect(human.stdout).toMatch(/healthy: all \d+ checks passed/);
    } finally {
      child.kill('SIGTERM');
      expect(await waitForExit(child)).toBe(0);
    }

    // A worker that stops gracefully leaves at once: doctor no longer counts it, and does not
    // claim that none ever ran.
    const { code, report } = await doctorJson();
    expect(code).toBe(1);
    expect(byName(report).workers).toMatchObject({
      ok: false,
      detail: 'no live worker: none is registered (none has run, or every one stopped)',
    });
  });
});

describe('a broken platform', () => {
  test('no live worker, stale prices and a job backlog: exit 1 and a fix for each', async () => {
    await runtime.pool.query(sql.unsafe`
      INSERT INTO worker_heartbeats (worker_id, hostname, pid, last_seen_at)
      VALUES ('old-host:4242:abc', 'old-host', 4242, now() - interval '10 minutes')
    `);
    await runtime.pool.query(sql.unsafe`
      UPDATE currency_snapshots SET observed_at = now() - interval '1 hour'
    `);
    await setSnapshot(runtime.pool, 'BTC', 65000, new Date(Date.now() - 3_600_000));
    await enqueueJob(runtime.pool, 'harvest_prices', {}, { runAt: new Date(Date.now() - 900_000) });

    const { code, report } = await doctorJson();
    expect(code).toBe(1);
    expect(report.healthy).toBe(false);
    const checks = byName(report);
    expect(checks.workers).toMatchObject({
      ok: false,
      detail: 'no live worker; the last one (old-host/4242) was seen 10 min ago',
      fix: expect.stringContaining('platform start --role worker'),
    });
    expect(checks.feed).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/newest price 3[56]\d\d s old; 0 of \d+ currencies/),
      fix: expect.stringContaining('start a worker'),
    });
    expect(checks.jobs).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/^1 due, 0 running, .*the oldest due job has waited 9\d\d s$/),
    });
    expect(checks.database!.ok).toBe(true);

    const human = await runCli(['doctor'], env);
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(/^FAIL\s+workers\s+no live worker/m);
    expect(human.stdout).toMatch(/^\s+fix: start one: `platform start --role worker`/m);
    expect(human.stdout).toMatch(/^FAIL\s+feed\s+/m);
    expect(human.stdout).toMatch(/4 problem\(s\): workers, worker, jobs, feed/);
  });

  test('an unreachable database: exit 1, one failed check with its fix, as JSON too', async () => {
    const result = await runCli(['doctor', '--json'], {
      DATABASE_URL: 'postgres://root@127.0.0.1:1/platform',
    });
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toEqual({
      healthy: false,
      checks: [
        {
          name: 'database',
          ok: false,
          detail: expect.stringMatching(
            /^cannot connect to postgres:\/\/root@127\.0\.0\.1:1\/platform/,
          ),
          fix: 'start PostgreSQL or set DATABASE_URL',
        },
      ],
    });
  });

  test('pending migrations stop the module checks and say how to apply them', async () => {
    await runtime.pool.query(sql.unsafe`
      DELETE FROM schema_migrations WHERE name = '0070_worker_heartbeats'
    `);
    try {
      const { code, report } = await doctorJson();
      expect(code).toBe(1);
      expect(byName(report).migrations).toMatchObject({
        ok: false,
        detail: 'pending: 0070_worker_heartbeats',
        fix: expect.stringContaining('platform migrate'),
      });
      expect(byName(report).workers).toBeUndefined();
    } finally {
      await runtime.pool.query(sql.unsafe`
        INSERT INTO schema_migrations (name, run_on) VALUES ('0070_worker_heartbeats', now())
      `);
    }
  });
});
