import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { getJson } from '../support/http.ts';
import { insertCandles } from '../support/prices.ts';
import {
  startCountingDataModule,
  startDataModule,
  type DataModuleHarness,
} from '../support/dataModule.ts';
import { ndjson, post, predictionRequest } from '../support/signals.ts';

let harness: DataModuleHarness;

beforeAll(async () => {
  harness = await startDataModule();
});

afterAll(async () => {
  await harness.close();
});

const addPrediction = (body: unknown, token = harness.writeToken) =>
  post(`${harness.server.url}/data/predictions/add`, token, body);
const addPredictionsBulk = (body: unknown, contentType = 'application/json') =>
  post(`${harness.server.url}/data/predictions/add/bulk`, harness.writeToken, body, contentType);

const predictionRow = z.object({
  id: z.number(),
  currency_code: z.string(),
  predicted_price: z.number(),
  model_type: z.string(),
  num_rows: z.number(),
  last_updated: z.date(),
});

const storedPrediction = (id: number) =>
  harness.runtime.pool.maybeOne(sql.type(predictionRow)`
    SELECT id, currency_code, predicted_price, model_type, num_rows, last_updated
    FROM predictions WHERE id = ${id}
  `);

const predictionCount = () =>
  harness.runtime.pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`SELECT count(*) AS n FROM predictions`,
  );

describe('POST /data/predictions/add', () => {
  test('202 with the new predictionId for the analysis service payload', async () => {
    const { status, body } = await addPrediction(predictionRequest());
    expect(status).toBe(202);
    expect(Object.keys(body)).toEqual(['predictionId']);
    expect(Number.isInteger(body.predictionId)).toBe(true);
    expect(await storedPrediction(body.predictionId)).toEqual({
      id: body.predictionId,
      currency_code: 'BTC',
      predicted_price: 65250.5,
      model_type: 'lstm',
      num_rows: 5000,
      last_updated: new Date('2026-03-01T12:00:00.000Z'),
    });
    const next = await addPrediction(predictionRequest({ modelType: 'complex_multi_layer' }));
    expect(next.body.predictionId).toBeGreaterThan(body.predictionId);
  });

  test('every model type is accepted; codes are case-insensitive', async () => {
    for (const modelType of ['lstm', 'complex_lstm', 'multi_layer', 'complex_multi_layer']) {
      expect((await addPrediction(predictionRequest({ modelType }))).status).toBe(202);
    }
    const lower = await addPrediction(predictionRequest({ currencyCode: 'eth' }));
    expect((await storedPrediction(lower.body.predictionId))?.currency_code).toBe('ETH');
  });

  test('422 for an unknown currency, and nothing is stored', async () => {
    const before = await predictionCount();
    const { status, body } = await addPrediction(predictionRequest({ currencyCode: 'NOPE' }));
    expect(status).toBe(422);
    expect(body.error.code).toBe('unknown_currency');
    expect(body.error.message).toContain('NOPE');
    expect(body.error.details[0].path).toBe('body.currencyCode');
    expect(await predictionCount()).toBe(before);
  });

  const invalid: Array<[string, string, Record<string, unknown>]> = [
    ['currencyCode', 'missing', { currencyCode: undefined }],
    ['currencyCode', 'not a code', { currencyCode: 'BT C' }],
    ['currencyCode', 'a number', { currencyCode: 1 }],
    ['predictedPrice', 'a string', { predictedPrice: '65000' }],
    ['predictedPrice', 'absurdly large', { predictedPrice: 1e13 }],
    ['actualPrice', 'missing', { actualPrice: undefined }],
    ['priceDifference', 'null', { priceDifference: null }],
    ['percentDifference', 'a boolean', { percentDifference: false }],
    ['modelType', 'not a known model', { modelType: 'gru' }],
    ['modelType', 'in capitals', { modelType: 'LSTM' }],
    ['numRows', 'negative', { numRows: -1 }],
    ['numRows', 'a fraction', { numRows: 2.5 }],
    ['numRows', 'beyond int4', { numRows: 2 ** 31 }],
    ['lastUpdated', 'missing', { lastUpdated: undefined }],
    ['lastUpdated', 'not a timestamp', { lastUpdated: 'noon' }],
  ];
  test.each(invalid)('400 naming %s when %s', async (field, _why, override) => {
    const before = await predictionCount();
    const { status, body } = await addPrediction(predictionRequest(override));
    expect(status).toBe(400);
    expect(body.error.code).toBe('validation_error');
    expect(body.error.message).toContain(`'${field}'`);
    expect(body.error.details[0].path).toBe(`body.${field}`);
    expect(await predictionCount()).toBe(before);
  });

  test('needs the write scope', async () => {
    expect((await addPrediction(predictionRequest(), harness.readToken)).status).toBe(403);
  });
});

describe('POST /data/predictions/add/bulk', () => {
  test('ids in request order, with validation (400) and unknown currency (422) rejections', async () => {
    const { status, body } = await addPredictionsBulk([
      predictionRequest({ predictedPrice: 1 }),
      predictionRequest({ currencyCode: 'NOPE' }),
      predictionRequest({ predictedPrice: 3, currencyCode: 'ETH' }),
      predictionRequest({ modelType: 'gru' }),
    ]);
    expect(status).toBe(200);
    expect(body).toMatchObject({ received: 4, accepted: 2, duplicates: 0, rejected: 2 });
    const [first, unknown, third, invalid] = body.predictionIds;
    expect(unknown).toBeNull();
    expect(invalid).toBeNull();
    expect((await storedPrediction(first))?.predicted_price).toBe(1);
    expect(await storedPrediction(third)).toMatchObject({
      predicted_price: 3,
      currency_code: 'ETH',
    });
    expect(body.rejections).toEqual([
      {
        index: 1,
        status: 422,
        code: 'unknown_currency',
        message: "Unknown currency 'NOPE'",
        details: [{ path: 'body.currencyCode', message: "Unknown currency 'NOPE'" }],
      },
      expect.objectContaining({
        index: 3,
        status: 400,
        code: 'validation_error',
        message: expect.stringContaining("'modelType'"),
      }),
    ]);
  });

  test('NDJSON, thousands of items, one statement', async () => {
    const counted = await startCountingDataModule(harness.runtime);
    try {
      const items = Array.from({ length: 3000 }, (_, i) =>
        predictionRequest({ predictedPrice: i + 1, currencyCode: i % 100 === 0 ? 'NOPE' : 'SOL' }),
      );
      const before = counted.statements();
      const { status, body } = await post(
        `${counted.url}/data/predictions/add/bulk`,
        harness.writeToken,
        ndjson(items),
        'application/x-ndjson',
      );
      expect(status).toBe(200);
      expect(counted.statements() - before).toBe(2); // the token check and the insert
      expect(body).toMatchObject({ received: 3000, accepted: 2970, rejected: 30 });
      // Each id belongs to its own item: predictedPrice i + 1 was sent at index i.
      const prices = await harness.runtime.pool.any(
        sql.type(
          z.object({ id: z.number(), predicted_price: z.number() }),
        )`SELECT id, predicted_price FROM predictions WHERE currency_code = 'SOL'`,
      );
      const priceById = new Map(prices.map((row) => [row.id, row.predicted_price]));
      body.predictionIds.forEach((id: number | null, index: number) => {
        if (index % 100 === 0) expect(id).toBeNull();
        else expect(priceById.get(id!)).toBe(index + 1);
      });
    } finally {
      await counted.close();
    }
  });
});

describe('GET /data/predictions', () => {
  // Prices (close) of ADA and predictions made against them; the expected errors are worked
  // out by hand from these numbers in the comments.
  const at = (time: string) => `2026-05-01T${time}Z`;
  const ids: Record<string, number> = {};

  beforeAll(async () => {
    await insertCandles(harness.runtime.pool, [
      { code: 'ADA', time: new Date(at('11:59:00')), open: 100, close: 100 },
      { code: 'ADA', time: new Date(at('12:00:00')), open: 105, close: 110 },
      { code: 'ADA', time: new Date(at('12:30:00')), open: 120, close: 120 },
      { code: 'ADA', time: new Date(at('13:30:00')), open: 80, close: 80 },
      { code: 'DOT', time: new Date(at('11:00:00')), open: 5, close: 5 },
    ]);
    const fixtures: Record<string, Record<string, unknown>> = {
      // No ADA price at or before 11:00: no market price, no error.
      early: { lastUpdated: '2026-05-01 11:00:00', predictedPrice: 100 },
      // Price at exactly 12:00 is 110: error 11, 10 %.
      p1: { lastUpdated: '2026-05-01 12:00:00', predictedPrice: 121 },
      // Latest price before 12:15 is 110: error −11, 10 %.
      p2: { lastUpdated: '2026-05-01 12:15:00', predictedPrice: 99 },
      // complex_lstm at 12:20 against 110: error 22, 20 %.
      p6: { lastUpdated: '2026-05-01 12:20:00', predictedPrice: 132, modelType: 'complex_lstm' },
      // 12:45 against 120: error 6, 5 %.
      p3: { lastUpdated: '2026-05-01 12:45:00', predictedPrice: 126 },
      // 13:59:59 against 80: error −20, 25 %.
      p4: { lastUpdated: '2026-05-01 13:59:59', predictedPrice: 60 },
      // Outside [11:00, 14:00).
      late: { lastUpdated: '2026-05-01 14:00:00', predictedPrice: 1 },
      // Another currency in the same range.
      other: { lastUpdated: '2026-05-01 12:00:00', predictedPrice: 6, currencyCode: 'DOT' },
    };
    for (const [name, fields] of Object.entries(fixtures)) {
      const { body } = await addPrediction(predictionRequest({ currencyCode: 'ADA', ...fields }));
      ids[name] = body.predictionId;
    }
  });

  const read = (query: string, token = harness.readToken) =>
    getJson(`${harness.server.url}/data/predictions?${query}`, token);
  const range = `code=ADA&from=${at('11:00:00')}&to=2026-05-01 14:00:00`;

  test('each prediction with the actual price at its time, its error and APE', async () => {
    const { status, body } = await read(range);
    expect(status).toBe(200);
    const rows = body.predictions.map(
      (p: {
        predictionId: number;
        marketPrice: number | null;
        error: number | null;
        absolutePercentageError: number | null;
      }) => [p.predictionId, p.marketPrice, p.error, p.absolutePercentageError],
    );
    expect(rows.map((r: unknown[]) => r.slice(0, 3))).toEqual([
      [ids.early, null, null],
      [ids.p1, 110, 11],
      [ids.p2, 110, -11],
      [ids.p6, 110, 22],
      [ids.p3, 120, 6],
      [ids.p4, 80, -20],
    ]);
    const apes = rows.map((r: unknown[]) => r[3]);
    expect(apes[0]).toBeNull();
    [10, 10, 20, 5, 25].forEach((ape, i) => expect(apes[i + 1]).toBeCloseTo(ape, 9));
    expect(body.predictions[1]).toEqual({
      predictionId: ids.p1,
      currencyCode: 'ADA',
      predictedPrice: 121,
      actualPrice: 64980.25,
      priceDifference: 270.25,
      percentDifference: 0.4159,
      modelType: 'lstm',
      numRows: 5000,
      lastUpdated: '2026-05-01T12:00:00.000Z',
      receivedAt: expect.stringMatching(/Z$/),
      marketPrice: 110,
      marketPriceTime: '2026-05-01T12:00:00.000Z',
      error: 11,
      absolutePercentageError: expect.any(Number),
    });
    expect(body.predictions[2].marketPriceTime).toBe('2026-05-01T12:00:00.000Z');
  });

  test('hourly averages of error, absolute error and APE', async () => {
    const { status, body } = await read(`${range}&intervalSeconds=3600`);
    expect(status).toBe(200);
    expect(body.buckets).toHaveLength(3);
    expect(body.buckets[0]).toEqual({
      timestamp: '2026-05-01T11:00:00.000Z',
      count: 1,
      evaluated: 0,
      meanError: null,
      meanAbsoluteError: null,
      meanAbsolutePercentageError: null,
    });
    // 12:00 bucket: errors 11, −11, 22, 6 → mean 7, MAE 12.5; APE 10, 10, 20, 5 → 11.25
    const noon = body.buckets[1];
    expect(noon).toMatchObject({ timestamp: '2026-05-01T12:00:00.000Z', count: 4, evaluated: 4 });
    expect(noon.meanError).toBeCloseTo(7, 9);
    expect(noon.meanAbsoluteError).toBeCloseTo(12.5, 9);
    expect(noon.meanAbsolutePercentageError).toBeCloseTo(11.25, 9);
    const one = body.buckets[2];
    expect(one).toMatchObject({ timestamp: '2026-05-01T13:00:00.000Z', count: 1, evaluated: 1 });
    expect(one.meanError).toBeCloseTo(-20, 9);
    expect(one.meanAbsolutePercentageError).toBeCloseTo(25, 9);
  });

  test('half-hour buckets of one model type', async () => {
    const { body } = await read(`${range}&intervalSeconds=1800&modelType=lstm`);
    const summary = body.buckets.map(
      (b: {
        timestamp: string;
        count: number;
        meanError: number | null;
        meanAbsolutePercentageError: number | null;
      }) => [
        b.timestamp.slice(11, 16),
        b.count,
        b.meanError === null ? null : Math.round(b.meanError * 1e9) / 1e9,
        b.meanAbsolutePercentageError === null
          ? null
          : Math.round(b.meanAbsolutePercentageError * 1e9) / 1e9,
      ],
    );
    // 12:00–12:30: errors 11 and −11 → mean 0, APE 10; 12:30: 6 → 5 %; 13:30: −20 → 25 %
    expect(summary).toEqual([
      ['11:00', 1, null, null],
      ['12:00', 2, 0, 10],
      ['12:30', 1, 6, 5],
      ['13:30', 1, -20, 25],
    ]);
  });

  test('pages with limit and offset', async () => {
    const { body } = await read(`${range}&limit=2&offset=1`);
    expect(body.predictions.map((p: { predictionId: number }) => p.predictionId)).toEqual([
      ids.p1,
      ids.p2,
    ]);
  });

  test('404 for an unknown code; 400 naming bad parameters', async () => {
    const unknown = await read('code=NOPE');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('unknown_currency');
    for (const [query, parameter] of [
      ['', 'code'],
      [`${range}&intervalSeconds=0`, 'intervalSeconds'],
      [`${range}&modelType=gru`, 'modelType'],
      [`${range}&limit=10001`, 'limit'],
      [`code=ADA&from=${at('12:00:00')}&to=${at('11:00:00')}`, 'to'],
      ['code=ADA&from=12:00', 'from'],
    ]) {
      const { status, body } = await read(query!);
      expect(status).toBe(400);
      expect(body.error.details[0].path).toBe(`query.${parameter}`);
    }
    const tooMany = await read(`code=ADA&from=2020-01-01&to=2026-01-01&intervalSeconds=60`);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.code).toBe('too_many_points');
  });

  test('needs the read scope', async () => {
    expect((await read(range, harness.writeToken)).status).toBe(403);
  });
});
