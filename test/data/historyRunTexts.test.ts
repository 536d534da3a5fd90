import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { queryCandlesJson, queryOpensJson } from '../../src/data/history/candleQuery.ts';
import { refreshRollups } from '../../src/data/history/refresh.ts';
import { checkRollups } from '../../src/data/history/doctorChecks.ts';
import { readRenderStatus, renderRunTexts } from '../../src/data/history/renderRunTexts.ts';
import { FORMAT_VERSION } from '../../src/data/history/jsonText.ts';
import { RENDERED_RUN_MS } from '../../src/data/history/runTexts.ts';
import { markTouchedRanges } from '../../src/data/prices/invalidations.ts';
import { bruteForceCandles, randomCandles } from '../support/candles.ts';
import { insertCandles, type Candle } from '../support/prices.ts';
import { createModeRuntime, MODES, type ModeRuntime } from '../support/rollupModes.ts';

// Whole hourly runs rendered into the database by the worker and read by the data module, in
// both rollup modes: the answers stay exact, the texts are really read, and a backfill never
// shows through a text rendered before it.

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const CODE = 'SOL';

const countRow = z.object({ n: z.number() });

describe.each(MODES)('rendered hourly runs, %s mode', (mode) => {
  let runtime: ModeRuntime;
  const now = Date.now();
  // Fifty days: two whole runs of 500 hours at least, whatever the day.
  const dataStart = now - 50 * DAY;
  let candles: Candle[] = [];
  const window = () => ({
    code: CODE,
    from: new Date(dataStart - HOUR),
    to: new Date(now),
    intervalSeconds: 3600,
  });

  const parse = (pieces: ReadonlyArray<string | Buffer>) =>
    JSON.parse(pieces.join('')) as unknown[];
  const candlesNow = async () =>
    parse((await queryCandlesJson(runtime.pool, { ...window(), fill: 'none' })).pieces);
  const opensNow = async () => parse((await queryOpensJson(runtime.pool, window())).pieces);

  async function expectExact() {
    const expected = bruteForceCandles(candles, CODE, 3600, dataStart - HOUR, now);
    expect(await candlesNow()).toEqual(expected);
    expect(await opensNow()).toEqual(
      expected.map((c) => ({ timestamp: c.timestamp, value: c.open })),
    );
  }

  async function refresh() {
    await refreshRollups(runtime.pool, { settleSeconds: 600, runPolicies: true });
    return renderRunTexts(runtime.pool);
  }

  const texts = async (where = sql.fragment`TRUE`) =>
    runtime.pool.oneFirst(sql.type(countRow)`
      SELECT count(*)::int AS n FROM history_run_texts WHERE currency_code = ${CODE} AND ${where}
    `);

  /** Puts a marker into the first non-empty open text; returns the condition naming its row. */
  async function markFirstOpenText() {
    const run = await runtime.pool.oneFirst(sql.type(z.object({ start: z.date() }))`
      SELECT run_start AS start FROM history_run_texts
      WHERE currency_code = ${CODE} AND shape = 'open' AND NOT empty
        AND run_start >= ${new Date(dataStart).toISOString()}::timestamptz
      ORDER BY run_start LIMIT 1
    `);
    const thatRun = sql.fragment`currency_code = ${CODE} AND shape = 'open'
      AND run_start = ${run.toISOString()}::timestamptz`;
    await runtime.pool.query(sql.unsafe`
      UPDATE history_run_texts SET items = '{"marker":true}' WHERE ${thatRun}
    `);
    return thatRun;
  }

  beforeAll(async () => {
    runtime = await createModeRuntime(mode);
    await runtime.pool.query(sql.unsafe`
      INSERT INTO currencies (code, name) VALUES (${CODE}, 'Solana') ON CONFLICT (code) DO NOTHING
    `);
    candles = randomCandles(91, [CODE], dataStart, now - 3 * HOUR).filter((_, i) => i % 9 === 0);
    for (let i = 0; i < candles.length; i += 5000) {
      await insertCandles(runtime.pool, candles.slice(i, i + 5000));
    }
  }, 180_000);

  afterAll(async () => {
    await runtime?.dispose();
  });

  test('the worker renders every whole run below the 1h watermark, once', async () => {
    const first = await refresh();
    const whole =
      Math.floor((now - 3 * HOUR) / RENDERED_RUN_MS) - Math.ceil(dataStart / RENDERED_RUN_MS);
    expect(first.caughtUp).toBe(true);
    expect(first.rendered).toBeGreaterThanOrEqual(2 * whole); // two shapes
    expect(await texts()).toBe(first.rendered);
    expect((await refresh()).rendered).toBe(0);
    await expectExact();
    // What `platform doctor` shows.
    const doctor = await checkRollups({ pool: runtime.pool });
    expect(doctor.find((check) => check.name === 'rendered history')?.detail).toBe(
      `${first.rendered} whole hourly runs rendered`,
    );
    await runtime.pool.query(sql.unsafe`
      DELETE FROM history_run_texts
      WHERE run_start = (SELECT max(run_start) FROM history_run_texts)
    `);
    expect(await readRenderStatus(runtime.pool)).toEqual({
      rendered: first.rendered - 2,
      missing: 2,
    });
    expect((await refresh()).rendered).toBe(2);
  });

  test('answers read the rendered texts', async () => {
    // A marker in one text shows in the answer: it came from the table, not from the rows.
    await markFirstOpenText();
    expect(await opensNow()).toContainEqual({ marker: true });
    // A text of another length (as if the run width had changed) is neither read nor kept.
    await runtime.pool.query(sql.unsafe`
      UPDATE history_run_texts SET run_end = run_end - interval '1 hour' WHERE items LIKE '%marker%'
    `);
    await expectExact();
    expect((await renderRunTexts(runtime.pool)).rendered).toBe(1);
    expect(await texts(sql.fragment`items LIKE '%marker%'`)).toBe(0);
    await expectExact();
  });

  test('a text of another format version is never read; an older one is rendered anew', async () => {
    const thatRun = await markFirstOpenText();
    expect(await opensNow()).toContainEqual({ marker: true }); // read from the table
    // As left by the previous release: not read, and replaced by the worker.
    await runtime.pool.query(sql.unsafe`
      UPDATE history_run_texts SET format_version = ${FORMAT_VERSION - 1} WHERE ${thatRun}
    `);
    await expectExact();
    expect((await renderRunTexts(runtime.pool)).rendered).toBe(1);
    expect(await texts(sql.fragment`format_version <> ${FORMAT_VERSION}`)).toBe(0);
    // As written by the next release during a rolling deploy: not read, not deleted.
    await runtime.pool.query(sql.unsafe`
      UPDATE history_run_texts SET format_version = ${FORMAT_VERSION + 1}, items = '{"marker":true}'
      WHERE ${thatRun}
    `);
    await expectExact();
    expect((await renderRunTexts(runtime.pool)).rendered).toBe(1);
    expect(await texts(sql.fragment`format_version = ${FORMAT_VERSION + 1}`)).toBe(1);
    await runtime.pool.query(sql.unsafe`
      DELETE FROM history_run_texts WHERE format_version <> ${FORMAT_VERSION}
    `);
    await expectExact();
  });

  test('new prices at the head, marked as bulk loads mark them, move no revision', async () => {
    const revision = () =>
      runtime.pool.maybeOneFirst(sql.type(z.object({ r: z.number() }))`
        SELECT revision AS r FROM rollup_revisions WHERE currency_code = ${CODE}
      `);
    const before = { revision: await revision(), texts: await texts() };
    const head = randomCandles(8, [CODE], Date.now() - 90_000, Date.now() - 30_000);
    await runtime.pool.transaction(async (tx) => {
      await insertCandles(tx, head);
      await markTouchedRanges(tx, [{ code: CODE, from: head[0]!.time, to: head.at(-1)!.time }]);
    });
    candles = [...candles, ...head];
    expect((await refresh()).rendered).toBe(0);
    expect({ revision: await revision(), texts: await texts() }).toEqual(before);
    await expectExact();
  });

  test('a backfill into a rendered run is exact before and after the refresh, never the old text', async () => {
    const target = Math.ceil(dataStart / RENDERED_RUN_MS) * RENDERED_RUN_MS + 100 * HOUR;
    const added = randomCandles(5, [CODE], target, target + 6 * HOUR).map((c) => ({
      ...c,
      time: new Date(c.time.getTime() + 1),
      open: c.open * 3,
    }));
    await runtime.pool.transaction(async (tx) => {
      await insertCandles(tx, added);
      await markTouchedRanges(tx, [{ code: CODE, from: added[0]!.time, to: added.at(-1)!.time }]);
    });
    candles = [...candles, ...added];
    await expectExact(); // pending: the touched run is computed, its text not read
    // Rendering while the mark is pending leaves the touched run alone (here: its open text).
    const touched = sql.fragment`run_start <= ${new Date(target).toISOString()}::timestamptz
      AND run_end > ${new Date(target).toISOString()}::timestamptz`;
    await runtime.pool.query(sql.unsafe`
      DELETE FROM history_run_texts WHERE currency_code = ${CODE} AND shape = 'open' AND ${touched}
    `);
    const whileMarked = await renderRunTexts(runtime.pool);
    expect(whileMarked.rendered).toBe(0);
    expect(await texts(touched)).toBe(1); // the candle text, rendered before the backfill

    // The refresh recomputes the rollups and moves the revision: until the texts are rendered
    // again, none rendered before is served.
    await refreshRollups(runtime.pool, { settleSeconds: 600, runPolicies: true });
    await expectExact();
    const rendered = await renderRunTexts(runtime.pool);
    expect(rendered.rendered).toBe(await texts());
    const revision = await runtime.pool.oneFirst(sql.type(z.object({ r: z.number() }))`
      SELECT revision AS r FROM rollup_revisions WHERE currency_code = ${CODE}
    `);
    expect(await texts(sql.fragment`revision <> ${revision}`)).toBe(0);
    await expectExact();
  });
});
