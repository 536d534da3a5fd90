import { execFileSync, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { PLATFORM_BIN, runCli, spawnCli, waitForExit } from '../support/cli.ts';
import { insertCandles } from '../support/prices.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

// Each case starts the real command (a Node process) once or more; on a busy machine a start
// takes seconds, so a case of several runs needs minutes.
jest.setTimeout(180_000);
let runtime: TestRuntime;
let env: Record<string, string>;

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  env = { DATABASE_URL: runtime.database.url };
});

afterAll(async () => {
  await runtime.dispose();
});

describe('platform token', () => {
  test('create prints the token once; list shows names and scopes only; revoke ends it', async () => {
    const created = await runCli(
      ['token', 'create', '--name', 'analysis', '--scope', 'read', '--scope', 'write', '--json'],
      env,
    );
    expect(created.code).toBe(0);
    const { token, scopes } = JSON.parse(created.stdout);
    expect(token).toMatch(/^pdt_[A-Za-z0-9_-]{43}$/);
    expect(scopes).toEqual(['read', 'write']);

    const listed = await runCli(['token', 'list'], env);
    expect(listed.stdout).toMatch(/analysis\s+read,write/);
    expect(listed.stdout).not.toContain(token);

    const duplicate = await runCli(['token', 'create', '--name', 'analysis'], env);
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toMatch(/already exists/);

    expect((await runCli(['token', 'revoke', 'analysis'], env)).code).toBe(0);
    expect((await runCli(['token', 'list', '--json'], env)).stdout.trim()).toBe('[]');
    const again = await runCli(['token', 'revoke', 'analysis'], env);
    expect(again.code).toBe(1);
  });

  test('usage errors exit with 2', async () => {
    expect((await runCli(['token', 'create'], env)).code).toBe(2);
    expect((await runCli(['token', 'create', '--name', 'x', '--scope', 'admin'], env)).code).toBe(
      2,
    );
    expect((await runCli(['no-such-command'], env)).code).toBe(2);
  });
});

describe('platform migrate', () => {
  test('--json prints the database state its --help names', async () => {
    const result = await runCli(['migrate', '--json'], env);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ database: 'exists', applied: [] });
    const help = await runCli(['migrate', '--help'], env);
    expect(help.stdout).toContain('"database": "created"|"exists"');
  });
});

describe('platform doctor', () => {
  test('reports database, extension, edition and migrations on a working setup', async () => {
    const result = await runCli(['doctor', '--json'], env);
    const report = JSON.parse(result.stdout);
    const byName = Object.fromEntries(
      report.checks.map((c: { name: string; ok: boolean }) => [c.name, c]),
    );
    expect(byName.database.ok).toBe(true);
    expect(byName.timescaledb.ok).toBe(true);
    expect(byName.edition.detail).toMatch(/TimescaleDB 2\.\d+\.\d+ \(apache edition/);
    expect(byName.migrations).toMatchObject({ ok: true, detail: 'all applied' });
    // Nothing has harvested prices into this database, and doctor says so.
    expect(byName.feed.ok).toBe(false);
    expect(result.code).toBe(1);
  });

  test('tells the operator what to fix when the database is unreachable', async () => {
    const result = await runCli(['doctor'], {
      DATABASE_URL: 'postgres://root@127.0.0.1:1/platform',
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/FAIL\s+database/);
    expect(result.stdout).toMatch(/fix: start PostgreSQL or set DATABASE_URL/);
  });

  test('a server without the platform database: a FAIL line saying how to create it', async () => {
    const url = 'postgres://root@127.0.0.1:5432/platform_doctor_never_created';
    const result = await runCli(['doctor'], { DATABASE_URL: url });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /FAIL\s+database\s+.*"platform_doctor_never_created" does not exist/,
    );
    expect(result.stdout).toMatch(/fix: run `platform migrate`/);
    const json = await runCli(['doctor', '--json'], { DATABASE_URL: url });
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout);
    expect(report.healthy).toBe(false);
    expect(report.checks.find((c: { name: string }) => c.name === 'database')).toMatchObject({
      ok: false,
      fix: expect.stringMatching(/platform migrate/),
    });
  });

  test('bad configuration stops with exit 2 and lists the problems', async () => {
    const result = await runCli(['doctor'], { DATABASE_URL: 'mysql://nope', DATA_PORT: 'x' });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/DATABASE_URL/);
    expect(result.stderr).toMatch(/DATA_PORT/);
  });
});

describe('platform export', () => {
  test('a reader that stops early (| head) ends the export quietly with exit 0', async () => {
    const now = Math.floor(Date.now() / 60_000) * 60_000;
    const candles = Array.from({ length: 6000 }, (_, i) => ({
      code: 'BTC',
      time: new Date(now - (i + 1) * 60_000),
      open: 40_000 + i,
    }));
    await insertCandles(runtime.pool, candles);
    // Far more than a pipe holds, so the command is still writing when the reader goes away.
    const child = spawn(
      process.execPath,
      [PLATFORM_BIN, 'export', 'BTC', '--hours', '100', '--interval', '60'],
      { env: { ...process.env, ...env, LOG_LEVEL: 'warn' } },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const firstLine = await new Promise<string>((resolve) => {
      let seen = '';
      child.stdout.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (seen.includes('\n')) {
          child.stdout.destroy();
          resolve(seen.split('\n')[0]!);
        }
      });
    });
    expect(firstLine).toBe('timestamp,open,high,low,close,volume,count');
    expect(await waitForExit(child)).toBe(0);
    expect(stderr).toBe('');
  });
});

describe('platform start', () => {
  test('on a terminal: migrates, serves the data module, prints a working token, stops on SIGTERM', async () => {
    const { child, output } = await spawnCli(
      ['start', '--role', 'data', '--platform.load.currency=false'],
      { ...env, DATA_PORT: '0', LOG_LEVEL: 'warn' },
      /try: curl .*\n/,
      30_000,
      { terminal: true },
    );
    const token = /data token[^:]*: (\S+)/.exec(output())?.[1];
    const url = /data\s+(http:\/\/\S+)/.exec(output())?.[1];
    expect(token).toMatch(/^pdt_/);
    const response = await fetch(`${url}/data/currency/all`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(response.status).toBe(200);
    child.kill('SIGTERM');
    expect(await waitForExit(child)).toBe(0);
  });

  test('off a terminal (a container log, a pipe) the read+write token is not printed', async () => {
    const { child, output } = await spawnCli(
      ['start', '--role', 'data', '--platform.load.currency=false'],
      { ...env, DATA_PORT: '0', LOG_LEVEL: 'debug' },
      /make one: .*\n/,
    );
    try {
      expect(output()).toMatch(/data token: not shown, as this output is not a terminal/);
      expect(output()).not.toMatch(/pdt_/);
      // The banner names the command that makes one, and it does.
      const hint = /make one: (platform token create [^\n]*)/.exec(output())![1]!;
      const args = hint.split(' ').slice(1);
      args[args.indexOf('<you>')] = 'banner-hint';
      const created = await runCli(args, env);
      expect(created.code).toBe(0);
      const token = /^(pdt_\S+)/.exec(created.stdout)![1];
      const url = /data\s+(http:\/\/\S+)/.exec(output())![1];
      const written = await fetch(`${url}/data/currency/all`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(written.status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      expect(await waitForExit(child)).toBe(0);
    }
  });
});

test('an older Node is told to step aside with a clear message', () => {
  let systemNode: string;
  try {
    systemNode = execFileSync('/usr/bin/node', ['--version']).toString().trim();
  } catch {
    return; // no system Node on this machine: nothing to check
  }
  if (Number(systemNode.slice(1).split('.')[0]) >= 24) return;
  let stderr = '';
  let status = 0;
  try {
    execFileSync('/usr/bin/node', [PLATFORM_BIN, '--help'], { stdio: 'pipe' });
  } catch (error) {
    stderr = String((error as { stderr: Buffer }).stderr);
    status = (error as { status: number }).status;
  }
  expect(status).toBe(1);
  expect(stderr).toMatch(/needs Node\.js 24/);
});
