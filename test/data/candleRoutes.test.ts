import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { checkRollups } from '../../src/data/history/doctorChecks.ts';
import { refreshRollups } from '../../src/data/history/refresh.ts';
import { createDataService } from '../../src/data/service.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import { getJson, serve } from '../support/http.ts';
import { insertCandles, type Candle } from '../support/prices.ts';
import { createModeRuntime, MODES, type ModeRuntime } from '../support/rollupModes.ts';

const MIN = 60_000;
const HOUR = 60 * MIN;
const at = (iso: string) => new Date(iso);

/** Half-hourly candles over [from, to): close = open + 1, volume 1. */
function halfHourly(code: string, from: string, to: string, base: number): Candle[] {
  const out: Candle[] = [];
  for (let t = Date.parse(from), i = 0; t < Date.parse(to); t += 30 * MIN, i++) {
    out.push({ code, time: new Date(t), open: base + i, close: base + i + 1, volume: 1 });
  }
  return out;
}

const DST_DATA = [
  ...halfHourly('BTC', '2024-03-28T00:00:00Z', '2024-04-03T00:00:00Z', 100),
  ...halfHourly('BTC', '2024-10-25T00:00:00Z', '2024-10-30T00:00:00Z', 500),
  ...halfHourly('BTC', '2024-03-08T00:00:00Z', '2024-03-13T00:00:00Z', 900),
  ...halfHourly('BTC', '2024-11-01T00:00:00Z', '2024-11-06T00:00:00Z', 1300),
];

// Minute buckets 10:00-10:09 with data in 10:02 and 10:05 only; neighbours outside the window.
const GAPPY: Candle[] = [
  { code: 'ETH', time: at('2024-05-01T09:55:00Z'), open: 49, close: 50, volume: 1 },
  { code: 'ETH', time: at('2024-05-01T10:02:10Z'), open: 10, close: 11, volume: 2 },
  { code: 'ETH', time: at('2024-05-01T10:05:30Z'), open: 20, close: 21, volume: 3 },
  { code: 'ETH', time: at('2024-05-01T10:20:00Z'), open: 30, close: 31, volume: 4 },
];
const GAP_WINDOW = 'from=2024-05-01T10:00:00Z&to=2024-05-01T10:10:00Z&interval=1m';

describe.each(MODES)('analyst candle routes, %s mode', (mode) => {
  let runtime: ModeRuntime;
  let server: RunningServer;
  let token: string;

  beforeAll(async () => {
    runtime = await createModeRuntime(mode, { HISTORY_MAX_POINTS: '500' });
    await generateCurrencies({
      pool: runtime.pool,
      logger: runtime.logger,
      loadFromExchange: false,
    });
    token = (await createToken(runtime.pool, 'analyst', ['read'])).token;
    await insertCandles(runtime.pool, [...DST_DATA, ...GAPPY]);
    await refreshRollups(runtime.pool, { settleSeconds: 0, runPolicies: true });
    server = await serve(createDataService(runtime).app);
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    await runtime?.dispose();
  });

  const candles = (query: string, code = 'BTC') =>
    getJson(`${server.url}/data/candles/${code}?${query}`, token);
  const exported = async (query: string, code = 'BTC') => {
    const response = await fetch(`${server.url}/data/candles/${code}/export?${query}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    return {
      status: response.status,
      type: response.headers.get('content-type'),
      text: await response.text(),
    };
  };

  test.each([
    [
      'Europe/Berlin',
      '2024-03-30T00:00:00+01:00',
      '2024-04-02T00:00:00+02:00',
      [
        ['2024-03-29T23:00:00.000Z', 48],
        ['2024-03-30T23:00:00.000Z', 46], // 31 March: 23 hours
        ['2024-03-31T22:00:00.000Z', 48],
      ],
    ],
    [
      'Europe/Berlin',
      '2024-10-26T00:00:00+02:00',
      '2024-10-29T00:00:00+01:00',
      [
        ['2024-10-25T22:00:00.000Z', 48],
        ['2024-10-26T22:00:00.000Z', 50], // 27 October: 25 hours
        ['2024-10-27T23:00:00.000Z', 48],
      ],
    ],
    [
      'America/New_York',
      '2024-03-09T00:00:00-05:00',
      '2024-03-12T00:00:00-04:00',
      [
        ['2024-03-09T05:00:00.000Z', 48],
        ['2024-03-10T05:00:00.000Z', 46],
        ['2024-03-11T04:00:00.000Z', 48],
      ],
    ],
    [
      'America/New_York',
      '2024-11-02T00:00:00-04:00',
      '2024-11-05T00:00:00-05:00',
      [
        ['2024-11-02T04:00:00.000Z', 48],
        ['2024-11-03T04:00:00.000Z', 50],
        ['2024-11-04T05:00:00.000Z', 48],
      ],
    ],
  ])(
    'daily candles in %s start at local midnight across DST (%s)',
    async (tz, from, to, expected) => {
      const { status, body } = await candles(
        `interval=1d&tz=${encodeURIComponent(tz)}&from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`,
      );
      expect(status).toBe(200);
      expect(body.map((c: { timestamp: string; count: number }) => [c.timestamp, c.count])).toEqual(
        expected,
      );
      const first = body[0];
      const inBucket = DST_DATA.filter(
        (c) =>
          c.time.getTime() >= Date.parse(first.timestamp) &&
          c.time.getTime() < Date.parse(body[1].timestamp),
      );
      expect(first).toEqual({
        timestamp: expected[0]![0],
        open: inBucket[0]!.open,
        high: inBucket.at(-1)!.close,
        low: inBucket[0]!.open,
        close: inBucket.at(-1)!.close,
        volume: inBucket.length,
        count: inBucket.length,
      });
    },
  );

  test('gap filling: none, null, previous (seeded from before the window), linear', async () => {
    const none = await candles(`${GAP_WINDOW}&fill=none`, 'ETH');
    expect(none.body.map((c: { timestamp: string }) => c.timestamp)).toEqual([
      '2024-05-01T10:02:00.000Z',
      '2024-05-01T10:05:00.000Z',
    ]);

    const nulls = await candles(`${GAP_WINDOW}&fill=null`, 'ETH');
    expect(nulls.body).toHaveLength(10);
    expect(nulls.body[0]).toEqual({
      timestamp: '2024-05-01T10:00:00.000Z',
      open: null,
      high: null,
      low: null,
      close: null,
      volume: 0,
      count: 0,
    });
    expect(nulls.body[2]).toEqual({
      timestamp: '2024-05-01T10:02:00.000Z',
      open: 10,
      high: 11,
      low: 10,
      close: 11,
      volume: 2,
      count: 1,
    });

    const previous = await candles(`${GAP_WINDOW}&fill=previous`, 'ETH');
    expect(previous.body.map((c: { close: number }) => c.close)).toEqual([
      50, 50, 11, 11, 11, 21, 21, 21, 21, 21,
    ]);
    expect(previous.body[0]).toMatchObject({ open: 50, high: 50, low: 50, volume: 0, count: 0 });

    const linear = await candles(`${GAP_WINDOW}&fill=linear`, 'ETH');
    const minute = (m: number) => Date.parse('2024-05-01T10:00:00Z') + m * MIN;
    const line = (x: number, x0: number, y0: number, x1: number, y1: number) =>
      y0 + ((y1 - y0) * (x - x0)) / (x1 - x0);
    const seed = Date.parse('2024-05-01T09:55:00Z');
    const after = Date.parse('2024-05-01T10:20:00Z');
    const expected = [
      line(minute(0), seed, 50, minute(2), 11),
      line(minute(1), seed, 50, minute(2), 11),
      11,
      line(minute(3), minute(2), 11, minute(5), 21),
      line(minute(4), minute(2), 11, minute(5), 21),
      21,
      ...[6, 7, 8, 9].map((m) => line(minute(m), minute(5), 21, after, 31)),
    ];
    const closes = linear.body.map((c: { close: number }) => c.close);
    expect(closes).toHaveLength(10);
    closes.forEach((value: number, i: number) => expect(value).toBeCloseTo(expected[i]!, 9));
  });

  test('previous-fill of an empty window still answers from older data; nothing at all is 204', async () => {
    const later = await candles(
      'from=2024-05-01T11:00:00Z&to=2024-05-01T11:03:00Z&interval=1m&fill=previous',
      'ETH',
    );
    expect(later.status).toBe(200);
    expect(later.body.map((c: { open: number }) => c.open)).toEqual([31, 31, 31]);
    // Weeks after the last observation the seed is still found (beyond the near look-up).
    const weeksLater = await candles(
      'from=2024-05-29T11:00:00Z&to=2024-05-29T11:02:00Z&interval=1m&fill=previous',
      'ETH',
    );
    expect(weeksLater.body.map((c: { open: number }) => c.open)).toEqual([31, 31]);
    const empty = await candles(
      'from=2024-05-01T11:00:00Z&to=2024-05-01T11:03:00Z&interval=1m&fill=none',
      'ETH',
    );
    expect(empty.status).toBe(204);
    const never = await candles(
      'from=2024-05-01T11:00:00Z&to=2024-05-01T11:03:00Z&interval=1m&fill=null',
      'SOL',
    );
    expect(never.status).toBe(204);
  });

  test.each([
    'interval=1h&from=2024-03-28T00:00:00Z&to=2024-04-03T00:00:00Z',
    'interval=4h&from=2024-03-27T00:00:00Z&to=2024-04-04T00:00:00Z&fill=previous',
    'interval=1d&tz=Europe%2FBerlin&from=2024-10-20T00:00:00Z&to=2024-11-01T00:00:00Z&fill=linear',
    'interval=15m&from=2024-03-31T00:00:00Z&to=2024-03-31T06:00:00Z&fill=null&tz=America%2FNew_York',
    // The repeated hours of autumn nights: distinct buckets in the JSON answer and the export alike.
    'interval=15m&from=2024-10-26T22:00:00Z&to=2024-10-27T04:00:00Z&fill=null&tz=Europe%2FBerlin',
    'interval=30m&from=2024-10-26T22:00:00Z&to=2024-10-27T04:00:00Z&fill=previous&tz=Europe%2FBerlin',
    'interval=30m&from=2024-11-03T03:00:00Z&to=2024-11-03T09:00:00Z&fill=linear&tz=America%2FNew_York',
    'interval=7&from=2024-03-31T00:00:00Z&to=2024-03-31T00:30:00Z',
    'interval=1w&origin=2024-01-01T00:00:00Z&offset=-6h&from=2024-02-01T00:00:00Z&to=2024-12-01T00:00:00Z',
    // Stamps between seconds: written with to_char, not from the timestamp's text (jsonText.ts).
    'interval=1h&origin=2024-01-01T00:00:00.250Z&from=2024-03-28T00:00:00Z&to=2024-03-30T00:00:00Z',
  ])('the CSV and NDJSON export equal the JSON answer: %s', async (query) => {
    const json = await candles(query);
    expect(json.status).toBe(200);
    const ndjson = await exported(`${query}&format=ndjson`);
    expect(ndjson.type).toMatch(/^application\/x-ndjson/);
    const lines = ndjson.text
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toEqual(json.body);
    const csv = await exported(query);
    expect(csv.type).toMatch(/^text\/csv/);
    const [header, ...rows] = csv.text.trimEnd().split('\n');
    expect(header).toBe('timestamp,open,high,low,close,volume,count');
    const parsed = rows.map((row) => {
      const [timestamp, ...numbers] = row.split(',');
      const [open, high, low, close, volume, count] = numbers.map((n) =>
        n === '' ? null : Number(n),
      );
      return { timestamp, open, high, low, close, volume, count };
    });
    expect(parsed).toEqual(json.body);
  });

  test('the export has no point cap; the JSON route refuses and points to it', async () => {
    const query = 'interval=1m&from=2024-03-28T00:00:00Z&to=2024-04-03T00:00:00Z&fill=previous';
    const refused = await candles(query);
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('too_many_points');
    expect(refused.body.error.message).toContain('/data/candles/BTC/export');
    const csv = await exported(query);
    expect(csv.status).toBe(200);
    expect(csv.text.trimEnd().split('\n')).toHaveLength(1 + 6 * 24 * 60);
  });

  test('doctor and readiness show the rollup mode and the lag of every level', async () => {
    const checks = await checkRollups({ pool: runtime.pool });
    expect(checks.find((c) => c.name === 'rollup mode')!.detail).toContain(
      mode === 'continuous' ? 'continuous aggregates' : 'rollup tables',
    );
    expect(checks.map((c) => c.name)).toEqual(
      expect.arrayContaining([
        'rollup 5m',
        'rollup 15m',
        'rollup 1h',
        'rollup 1d',
        'rollup 1h_at30',
        'backfills',
      ]),
    );
    const ready = await getJson(`${server.url}/health/ready`);
    expect(ready.body.details.rollups.mode).toBe(mode);
    expect(ready.body.details.rollups.levels.map((l: { level: string }) => l.level)).toEqual([
      '5m',
      '15m',
      '1h',
      '1d',
      '1h_at15',
      '1h_at30',
    ]);
  });
});

describe('analyst routes: validation and the export command', () => {
  let runtime: ModeRuntime;
  let server: RunningServer;
  let token: string;
  let writeToken: string;

  beforeAll(async () => {
    runtime = await createModeRuntime('tables');
    await generateCurrencies({
      pool: runtime.pool,
      logger: runtime.logger,
      loadFromExchange: false,
    });
    token = (await createToken(runtime.pool, 'analyst', ['read'])).token;
    writeToken = (await createToken(runtime.pool, 'writer', ['write'])).token;
    const now = Date.now();
    await insertCandles(
      runtime.pool,
      Array.from({ length: 300 }, (_, i) => ({
        code: 'SOL',
        time: new Date(now - 5 * HOUR + i * 37_000),
        open: 150 + Math.sin(i),
        close: 150 + Math.cos(i),
        volume: i % 7,
      })),
    );
    server = await serve(createDataService(runtime).app);
  });

  afterAll(async () => {
    await server?.close();
    await runtime?.dispose();
  });

  const candles = (query: string, code = 'SOL', bearer = token) =>
    getJson(`${server.url}/data/candles/${code}?${query}`, bearer);

  test('hours, shorthand intervals and the default window', async () => {
    const seconds = await candles('hours=6&interval=900');
    const shorthand = await candles('hours=6&interval=15m');
    expect(seconds.status).toBe(200);
    expect(shorthand.body).toEqual(seconds.body);
    const byDefault = await candles('interval=15m');
    expect(byDefault.body).toEqual(seconds.body);
    expect(seconds.body.reduce((n: number, c: { count: number }) => n + c.count, 0)).toBe(300);
  });

  test.each([
    ['interval=0', 'interval'],
    ['interval=1x', 'interval'],
    ['interval=1.5h', 'interval'],
    ['tz=Mars%2FOlympus', 'tz'],
    ['fill=sideways', 'fill'],
    ['hours=3&from=2024-01-01T00:00:00Z', 'hours'],
    ['to=2024-01-01T00:00:00Z', 'from'],
    ['from=2024-01-02T00:00:00Z&to=2024-01-01T00:00:00Z', 'to'],
    ['from=yesterday', 'from'],
    ['origin=2024-01-01', 'origin'],
    ['offset=5y', 'offset'],
  ])('400 naming the parameter for %s', async (query, parameter) => {
    const { status, body } = await candles(query);
    expect(status).toBe(400);
    expect(body.error.details[0].path).toBe(`query.${parameter}`);
  });

  test('404 for an unknown currency, 401/403 without the read scope', async () => {
    expect((await candles('hours=1', 'NOPE')).status).toBe(404);
    expect((await candles('hours=1', 'SOL', '')).status).toBe(401);
    expect((await candles('hours=1', 'SOL', writeToken)).status).toBe(403);
    const exportResponse = await getJson(`${server.url}/data/candles/NOPE/export?hours=1`, token);
    expect(exportResponse.status).toBe(404);
  });

  test('`platform export` streams what the route exports', async () => {
    const from = new Date(Math.floor((Date.now() - 6 * HOUR) / HOUR) * HOUR).toISOString();
    const to = new Date(Math.floor(Date.now() / HOUR) * HOUR + HOUR).toISOString();
    const route = await fetch(
      `${server.url}/data/candles/SOL/export?from=${from}&to=${to}&interval=10m&format=ndjson&fill=previous`,
      { headers: { authorization: `Bearer ${token}` } },
    );
    const cli = await runCli(
      [
        'export',
        'sol',
        '--from',
        from,
        '--to',
        to,
        '--interval',
        '10m',
        '--format',
        'ndjson',
        '--fill',
        'previous',
      ],
      runtime.config.DATABASE_URL,
    );
    expect(cli.code).toBe(0);
    expect(cli.stdout).toBe(await route.text());
    expect(cli.stdout.split('\n').length).toBeGreaterThan(30);

    const bad = await runCli(['export', 'SOL', '--interval', 'soon'], runtime.config.DATABASE_URL);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--interval');
    const unknown = await runCli(['export', 'NOPE'], runtime.config.DATABASE_URL);
    expect(unknown.code).toBe(1);
  }, 60_000);
});

function runCli(args: string[], databaseUrl: string) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ['bin/platform.mjs', ...args], {
      env: { ...process.env, DATABASE_URL: databaseUrl, NODE_OPTIONS: '', LOG_LEVEL: 'silent' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
