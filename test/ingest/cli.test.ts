import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { pendingIngestJobs } from '../../src/data/ingest/jobs.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { FakeBinance } from './fakeBinance.ts';
import { binanceLines, tempDir, writeZip } from './fixtures.ts';

const run = promisify(execFile);
// Each case starts the real command (a Node process) once or more; on a busy machine that is slow.
jest.setTimeout(120_000);
let runtime: TestRuntime;
let files: Awaited<ReturnType<typeof tempDir>>;
let fake: FakeBinance;

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  files = await tempDir();
  fake = await new FakeBinance().start();
});

afterAll(async () => {
  await fake.stop();
  await files.remove();
  await runtime.dispose();
});

/** Runs `platform backfill …` as a user would; resolves with the exit code and output. */
async function backfill(...args: string[]) {
  try {
    const { stdout, stderr } = await run(
      join(process.cwd(), 'node_modules', '.bin', 'node'),
      [join(process.cwd(), 'bin', 'platform.mjs'), 'backfill', ...args],
      {
        env: {
          ...process.env,
          DATABASE_URL: runtime.config.DATABASE_URL,
          BINANCE_API_URL: fake.url,
          LOG_LEVEL: 'warn',
        },
      },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const countOf = (code: string) =>
  runtime.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM price_observations WHERE currency_code = ${code}`);

const unitsRecordedFor = (path: string) =>
  runtime.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM ingest_units WHERE label = ${path}`);

describe('platform backfill', () => {
  test('loads a directory and prints the summary with rejected rows as file:line', async () => {
    await writeZip(join(files.dir, 'BTCUSDT-1m-2024-03.zip'), {
      'BTCUSDT-1m-2024-03.csv': binanceLines(Date.UTC(2024, 2, 1), 100).join('\n'),
    });
    const bad = await files.file(
      'ticks.csv',
      'time,code,price\n2024-03-01T00:00:00Z,ETH,3400\n2024-03-01T00:01:00Z,ETH,x\n',
    );
    const first = await backfill(files.dir);
    // A rejected row is input not loaded: exit 1, as --help says, though both files loaded.
    expect(first.code).toBe(1);
    expect(first.stdout).toMatch(/2 files \(2 loaded\)/);
    expect(first.stdout).toMatch(/inserted\s+101/);
    expect(first.stdout).toContain(`${bad}:3  price is not a number`);
    expect(await countOf('BTC')).toBe(100);

    const again = await backfill(files.dir, '--json');
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ units: 2, skipped: 2, inserted: 0, read: 0 });
  });

  test('--strict exits 1 and writes nothing of a file with a malformed row', async () => {
    const path = await files.file(
      'strict/ticks.csv',
      'time,code,price\n2024-04-01T00:00:00Z,SOL,150\n2024-04-01T00:01:00Z,SOL,-1\n',
    );
    const result = await backfill(path, '--strict', '--json');
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({ rejectedUnits: 1, inserted: 0, rejected: 1 });
    expect(await countOf('SOL')).toBe(0);
  });

  test('a file whose every row is rejected is reported as 0 loaded, exits 1 and stays unrecorded', async () => {
    const path = await files.file(
      'allbad/eth.csv',
      'time,code,price\n2024-06-01T00:00:00Z,ETH,x\n2024-06-01T00:01:00Z,ETH,-3\n',
    );
    for (const run of ['first', 'rerun']) {
      const result = await backfill(path);
      expect({ run, code: result.code }).toEqual({ run, code: 1 });
      expect(result.stdout).toMatch(/backfill: 1 file \(0 loaded, 1 rejected\)/);
      expect(result.stdout).toMatch(/inserted\s+0\n/);
      expect(result.stdout).toMatch(/rejected\s+2\n/);
      expect(result.stdout).toContain(`${path}  all 2 row(s) rejected; nothing loaded`);
    }
    expect(await unitsRecordedFor(path)).toBe(0);
  });

  test('a --strict rerun of a file loaded earlier with rejected rows is read again and refused', async () => {
    const path = await files.file(
      'rerun/dot.csv',
      'time,code,price\n2024-06-02T00:00:00Z,DOT,7\n2024-06-02T00:01:00Z,DOT,x\n',
    );
    const lenient = await backfill(path, '--json');
    expect(lenient.code).toBe(1);
    expect(JSON.parse(lenient.stdout)).toMatchObject({ loaded: 1, inserted: 1, rejected: 1 });

    const again = await backfill(path, '--json');
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ skipped: 1, read: 0 });

    const strict = await backfill(path, '--strict', '--json');
    expect(strict.code).toBe(1);
    const summary = JSON.parse(strict.stdout);
    expect(summary).toMatchObject({ skipped: 0, rejectedUnits: 1, read: 2, rejected: 1 });
    expect(summary.failures[0].error).toMatch(
      /--strict rejects the whole file; the rows an earlier load of it stored stay$/,
    );
    expect(await countOf('DOT')).toBe(1);
  });

  test('control bytes from a file are shown escaped, never sent raw to the terminal', async () => {
    const path = await files.file(
      'hostile/evil\x1b]0;owned\x07.csv',
      'time,code,price\n2024-06-03T00:00:00Z,\x1b[2J\x1b[31mETH\rXX,3400\n',
    );
    const result = await backfill(path);
    expect(result.code).toBe(1);
    const output = result.stdout + result.stderr;
    // eslint-disable-next-line no-control-regex -- no raw control byte may reach the terminal
    expect(output).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f]/);
    expect(result.stdout).toContain('evil\\x1b]0;owned\\x07.csv:2');
    expect(result.stdout).toContain("code '\\x1b[2J\\x1b[31mETH\\x0dXX'");
  });

  test('a missing path and a file that cannot be planned are failed units; exit 1', async () => {
    const missing = join(files.dir, 'failing', 'nowhere.csv');
    const damaged = await files.file('failing/BTCUSDT-1m-2024-05.zip', 'not a zip');
    const result = await backfill(missing, damaged, '--json');
    expect(result.code).toBe(1);
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({ units: 2, failed: 2, inserted: 0 });
    expect(summary.failures).toEqual([
      { file: missing, error: 'no such file or directory' },
      { file: damaged, error: expect.stringMatching(/^not a readable zip file/) },
    ]);
  });

  test('usage errors exit 2', async () => {
    expect((await backfill()).code).toBe(2);
    expect((await backfill('--source', 'binance', '--code', 'BTC')).code).toBe(2);
    expect(
      (
        await backfill(
          '--source',
          'binance',
          '--code',
          'BTC',
          '--from',
          'soon',
          '--to',
          '2024-01-02',
        )
      ).code,
    ).toBe(2);
    expect(
      (
        await backfill(
          '--source',
          'nowhere',
          '--code',
          'BTC',
          '--from',
          '2024-01-01',
          '--to',
          '2024-01-02',
        )
      ).code,
    ).toBe(2);
  });

  test('--source binance pages the exchange API into the table', async () => {
    const result = await backfill(
      '--source',
      'binance',
      '--code',
      'XRP',
      '--from',
      '2023-01-01',
      '--to',
      '2023-01-02T12:00',
      '--json',
    );
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ units: 2, loaded: 2, inserted: 2160 });
    expect(await countOf('XRP')).toBe(2160);
  });

  test('--enqueue queues one job per file and loads nothing itself', async () => {
    const path = await files.file(
      'queued/ada.csv',
      'time,code,price\n2024-05-01T00:00:00Z,ADA,0.5\n',
    );
    const result = await backfill(path, '--enqueue');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/enqueued 1 file job/);
    expect(await pendingIngestJobs(runtime.pool)).toBe(1);
    expect(await countOf('ADA')).toBe(0);
  });
});
