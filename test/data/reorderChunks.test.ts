import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { refreshRollups } from '../../src/data/history/refresh.ts';
import { checkRollups } from '../../src/data/history/doctorChecks.ts';
import { reorderClosedChunks } from '../../src/data/history/reorderChunks.ts';
import { startWorkerRunner } from '../../src/worker/start.ts';
import { createTaskList, crontab } from '../../workers/index.ts';
import { insertCandles, type Candle } from '../support/prices.ts';
import { createModeRuntime, MODES, type ModeRuntime } from '../support/rollupModes.ts';
import { until } from '../support/wait.ts';

// Closed chunks are put in (currency_code, time) order once, in both editions (CLUSTER on the
// Apache one, reorder_chunk on Timescale's), without changing a row; the chunks still written to
// are left alone, and a chunk whose lock is busy is left to the next call.

const MIN = 60_000;
const DAY = 1440 * MIN;
const CODES = ['AAA', 'BBB', 'CCC'];
const oldest = Math.floor((Date.now() - 70 * DAY) / DAY) * DAY;

/** Five-minute prices of three currencies over 30 days from 70 days ago, written as the harvest
 * writes them: every currency of the same time together. Plus the last hour's. */
function harvestedCandles(): Candle[] {
  const times: number[] = [];
  for (let t = oldest; t < oldest + 30 * DAY; t += 5 * MIN) times.push(t);
  const recent = Math.floor(Date.now() / MIN) * MIN - 60 * MIN;
  for (let t = recent; t < recent + 60 * MIN; t += 5 * MIN) times.push(t);
  return times.flatMap((t) =>
    CODES.map((code, i) => ({ code, time: new Date(t), open: 100 + i + ((t / MIN) % 17) })),
  );
}

describe.each(MODES)('reordering closed chunks, %s mode', (mode) => {
  let runtime: ModeRuntime;

  beforeAll(async () => {
    runtime = await createModeRuntime(mode);
    await insertCandles(runtime.pool, harvestedCandles());
    await refreshRollups(runtime.pool, { settleSeconds: 0, runPolicies: true });
  }, 180_000);

  afterAll(async () => {
    await runtime?.dispose();
  });

  /** How many stretches of one currency's rows the chunk's heap holds, in physical order. */
  const stretches = async (chunk: string) =>
    runtime.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*) FILTER (WHERE previous IS DISTINCT FROM currency_code)::int AS n
      FROM (SELECT currency_code, lag(currency_code) OVER (ORDER BY ctid) AS previous
            FROM ${sql.identifier(chunk.split('.'))}) AS physical`);

  /** platform doctor's line on the chunks still in write order. */
  const chunkOrder = async () =>
    (await checkRollups({ pool: runtime.pool })).find((check) => check.name === 'chunk order')!;

  /** Every row of the raw table and of the 5-minute level, as one digest. */
  const contents = () =>
    runtime.pool.oneFirst(sql.type(z.object({ digest: z.string() }))`
      SELECT md5(string_agg(row_text, '|' ORDER BY row_text)) AS digest FROM (
        SELECT format('%s %s %s %s', currency_code, time, open, close) AS row_text
        FROM price_observations
        UNION ALL
        SELECT format('%s %s %s %s %s', currency_code, bucket, open, close, count)
        FROM candles_5m) AS rows`);

  /** A relation's chunks, oldest first, and whether each is closed (its range ended a day ago). */
  const chunksWithState = (relation: 'price_observations' | 'candles_5m') =>
    runtime.pool.any(sql.type(z.object({ chunk: z.string(), closed: z.boolean() }))`
      SELECT format('%s.%s', c.chunk_schema, c.chunk_name) AS chunk,
             c.range_end <= now() - interval '1 day' AS closed
      FROM timescaledb_information.chunks c
      WHERE c.hypertable_name = ${relation}
         OR c.hypertable_name = (SELECT materialization_hypertable_name
                                 FROM timescaledb_information.continuous_aggregates
                                 WHERE view_name = ${relation})
      ORDER BY c.range_start`);
  const chunksOf = async (relation: 'price_observations' | 'candles_5m') =>
    (await chunksWithState(relation)).map(({ chunk }) => chunk);

  test('candles_5m is cut in 7-day chunks, as the raw table is: its open chunk stays in write order for days, not a month', async () => {
    const intervals = await runtime.pool.anyFirst(sql.type(z.object({ days: z.number() }))`
      SELECT extract(epoch FROM d.time_interval)::int / 86400 AS days
      FROM timescaledb_information.dimensions d
      WHERE d.hypertable_name IN ('price_observations', 'candles_5m',
        (SELECT materialization_hypertable_name FROM timescaledb_information.continuous_aggregates
         WHERE view_name = 'candles_5m'))`);
    expect(intervals).toEqual([7, 7]);
    const spans = await runtime.pool.anyFirst(sql.type(z.object({ days: z.number() }))`
      SELECT DISTINCT extract(epoch FROM c.range_end - c.range_start)::int / 86400 AS days
      FROM timescaledb_information.chunks c
      WHERE c.hypertable_name = (SELECT materialization_hypertable_name
                                 FROM timescaledb_information.continuous_aggregates
                                 WHERE view_name = 'candles_5m')
         OR c.hypertable_name = 'candles_5m'`);
    expect(spans).toEqual([7]);
  });

  test('closed chunks of the raw table and the levels are put in currency order, nothing else', async () => {
    const before = await contents();
    const raw = await chunksWithState('price_observations');
    const closedRaw = raw.filter(({ closed }) => closed).map(({ chunk }) => chunk);
    // The last hour's chunk, or two when a chunk boundary falls inside that hour.
    const openRaw = raw.filter(({ closed }) => !closed).map(({ chunk }) => chunk);
    expect(closedRaw.length).toBeGreaterThan(3);
    expect(openRaw.length).toBeGreaterThan(0);
    for (const chunk of closedRaw) expect(await stretches(chunk)).toBeGreaterThan(100);

    const waiting = await chunkOrder();
    expect(waiting.ok).toBe(false);
    expect(waiting.detail).toMatch(/^\d+ closed chunks in write order \(none reordered yet\)/);

    const result = await reorderClosedChunks(runtime.pool, { maxChunks: 100 });

    expect(await chunkOrder()).toMatchObject({
      ok: true,
      detail: 'every closed chunk is in currency order',
    });

    expect(result.busy).toEqual([]);
    expect(result.reordered).toEqual(expect.arrayContaining(closedRaw));
    for (const chunk of openRaw) expect(result.reordered).not.toContain(chunk);
    const levelChunks = (await chunksOf('candles_5m')).filter((chunk) =>
      result.reordered.includes(chunk),
    );
    expect(levelChunks.length).toBeGreaterThan(0);
    for (const chunk of [...closedRaw, ...levelChunks]) {
      expect(await stretches(chunk)).toBe(CODES.length);
    }
    const openStretches = await Promise.all(openRaw.map(stretches));
    expect(openStretches.reduce((sum, n) => sum + n, 0)).toBeGreaterThan(
      openRaw.length * CODES.length,
    );
    expect(await contents()).toBe(before);
    // Analysed in their new order: the planner's index costs follow the heap's correlation.
    const unanalysed = await runtime.pool.anyFirst(sql.type(z.object({ chunk: z.string() }))`
      SELECT chunk FROM unnest(${sql.array(result.reordered, 'text')}) AS chunk
      WHERE (SELECT last_analyze FROM pg_stat_all_tables WHERE relid = chunk::regclass) IS NULL`);
    expect(unanalysed).toEqual([]);
  }, 120_000);

  test('each chunk is reordered once', async () => {
    expect(await reorderClosedChunks(runtime.pool, { maxChunks: 100 })).toEqual({
      reordered: [],
      busy: [],
    });
  });

  if (mode === 'continuous') {
    test('a compressed chunk is left as it is', async () => {
      const [chunk] = await chunksOf('price_observations');
      await runtime.pool.query(sql.unsafe`DELETE FROM chunk_reorders WHERE chunk = ${chunk!}`);
      await runtime.pool.query(sql.unsafe`
        ALTER TABLE price_observations
          SET (timescaledb.compress, timescaledb.compress_segmentby = 'currency_code')`);
      await runtime.pool.query(sql.unsafe`SELECT compress_chunk(${chunk!}::regclass)`);
      expect(await reorderClosedChunks(runtime.pool)).toEqual({ reordered: [], busy: [] });
    });
  }

  if (mode === 'tables') {
    test('a chunk whose lock is busy is left to the next call', async () => {
      const [chunk] = await chunksOf('price_observations');
      await runtime.pool.query(sql.unsafe`DELETE FROM chunk_reorders WHERE chunk = ${chunk!}`);
      // A reader inside a transaction holds its lock on the chunk until it ends (the platform's
      // pg pool: Slonik keeps a transaction's callback to its own connection).
      const reader = await runtime.pgPool.connect();
      try {
        await reader.query('BEGIN');
        await reader.query(`LOCK TABLE ${chunk} IN ACCESS SHARE MODE`);
        const blocked = await reorderClosedChunks(runtime.pool, { lockTimeoutMs: 100 });
        expect(blocked).toEqual({ reordered: [], busy: [chunk] });
        // Left over while the job runs: the doctor reports it, and no fault.
        expect(await chunkOrder()).toMatchObject({ ok: true });
        expect((await chunkOrder()).detail).toMatch(/^1 closed chunk in write order \(last one/);
      } finally {
        await reader.query('ROLLBACK');
        reader.release();
      }
      const freed = await reorderClosedChunks(runtime.pool, { lockTimeoutMs: 100 });
      expect(freed).toEqual({ reordered: [chunk], busy: [] });
    });

    test('the worker reorders from its task list and crontab', async () => {
      expect(crontab.some((line) => / reorder_chunks /.test(line))).toBe(true);
      const [chunk] = await chunksOf('price_observations');
      await runtime.pool.query(sql.unsafe`DELETE FROM chunk_reorders WHERE chunk = ${chunk!}`);
      const runner = await startWorkerRunner(runtime, {
        taskList: createTaskList(runtime),
        concurrency: 1,
      });
      try {
        await runner.addJob('reorder_chunks', {});
        const recorded = () =>
          runtime.pool.exists(sql.unsafe`SELECT FROM chunk_reorders WHERE chunk = ${chunk!}`);
        await until(recorded, 60_000, 'the chunk reordered by the worker');
      } finally {
        await runner.stop();
      }
    });
  }
});
