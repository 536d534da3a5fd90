import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { getJson } from '../support/http.ts';
import {
  startCountingDataModule,
  startDataModule,
  type DataModuleHarness,
} from '../support/dataModule.ts';
import { ndjson, post, predictionRequest, trainingSessionRequest } from '../support/signals.ts';

let harness: DataModuleHarness;

beforeAll(async () => {
  harness = await startDataModule();
});

afterAll(async () => {
  await harness.close();
});

const addPrediction = async (overrides: Record<string, unknown> = {}): Promise<number> => {
  const { status, body } = await post(
    `${harness.server.url}/data/predictions/add`,
    harness.writeToken,
    predictionRequest(overrides),
  );
  expect(status).toBe(202);
  return body.predictionId as number;
};
const addSession = (body: unknown, token = harness.writeToken) =>
  post(`${harness.server.url}/data/training-session/add`, token, body);
const addSessionsBulk = (body: unknown, contentType = 'application/json') =>
  post(
    `${harness.server.url}/data/training-session/add/bulk`,
    harness.writeToken,
    body,
    contentType,
  );
const list = (query: string, token = harness.readToken) =>
  getJson(`${harness.server.url}/data/training-sessions?${query}`, token);

const sessionCount = () =>
  harness.runtime.pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`SELECT count(*) AS n FROM training_sessions`,
  );

describe('prediction → predictionId → training session', () => {
  test('the analysis service flow, read back with the linked prediction', async () => {
    const predictionId = await addPrediction({ currencyCode: 'XRP' });
    const { status, body } = await addSession(
      trainingSessionRequest(predictionId, { currency: 'XRP' }),
    );
    expect(status).toBe(200);
    expect(body).toEqual({ successful: true });

    const read = await list('currency=XRP');
    expect(read.status).toBe(200);
    expect(read.body.trainingSessions).toEqual([
      {
        trainingSessionId: expect.any(Number),
        currency: 'XRP',
        prediction: predictionId,
        numRows: 5000,
        epochsTrained: 37,
        maxEpochs: 100,
        startingLoss: 0.2431,
        finalLoss: 0.0122,
        modelType: 'lstm',
        queryType: 'historical_price',
        trainingStartTime: '2026-03-01T11:00:00.000Z',
        trainingEndTime: '2026-03-01T11:42:10.000Z',
        queryStartTime: '2026-02-01T00:00:00.000Z',
        queryEndTime: '2026-03-01T00:00:00.000Z',
        sequenceLength: 60,
        batchSize: 32,
        dimensionWidth: 128,
        queryLoad: 'batches',
        queryBatchSize: null,
        trainingDevice: 'gpu_0',
        shortSequenceLength: null,
        mediumSequenceLength: null,
        longSequenceLength: null,
        receivedAt: expect.stringMatching(/Z$/),
        linkedPrediction: {
          predictionId,
          currencyCode: 'XRP',
          predictedPrice: 65250.5,
          actualPrice: 64980.25,
          priceDifference: 270.25,
          percentDifference: 0.4159,
          modelType: 'lstm',
          numRows: 5000,
          lastUpdated: '2026-03-01T12:00:00.000Z',
          receivedAt: expect.stringMatching(/Z$/),
        },
      },
    ]);
  });

  test('queryLoad as a plain string, set sequence lengths, another GPU, nullable fields omitted', async () => {
    const predictionId = await addPrediction();
    const request = trainingSessionRequest(predictionId, {
      currency: 'LTC',
      queryLoad: 'bulk',
      queryBatchSize: 256,
      trainingDevice: 'gpu_1',
      shortSequenceLength: 10,
      mediumSequenceLength: 30,
      longSequenceLength: 90,
    });
    expect((await addSession(request)).status).toBe(200);
    const {
      shortSequenceLength: _s,
      queryBatchSize: _q,
      ...omitted
    } = trainingSessionRequest(predictionId, {
      currency: 'LTC',
      trainingDevice: 'cpu',
      trainingStartTime: '2026-03-01 10:00:00',
    });
    expect((await addSession(omitted)).status).toBe(200);
    const { body } = await list('currency=ltc');
    expect(
      body.trainingSessions.map((s: Record<string, unknown>) => [
        s.queryLoad,
        s.queryBatchSize,
        s.trainingDevice,
        s.shortSequenceLength,
        s.longSequenceLength,
      ]),
    ).toEqual([
      ['bulk', 256, 'gpu_1', 10, 90],
      ['batches', null, 'cpu', null, null],
    ]);
  });

  test('422 for an unknown prediction or currency, and nothing is stored', async () => {
    const before = await sessionCount();
    const noPrediction = await addSession(trainingSessionRequest(987654321));
    expect(noPrediction.status).toBe(422);
    expect(noPrediction.body.error.code).toBe('unknown_prediction');
    expect(noPrediction.body.error.details).toEqual([
      { path: 'body.prediction', message: 'Unknown prediction 987654321' },
    ]);
    const predictionId = await addPrediction();
    const noCurrency = await addSession(trainingSessionRequest(predictionId, { currency: 'NOPE' }));
    expect(noCurrency.status).toBe(422);
    expect(noCurrency.body.error.code).toBe('unknown_currency');
    expect(noCurrency.body.error.details[0].path).toBe('body.currency');
    expect(await sessionCount()).toBe(before);
  });

  const invalid: Array<[string, string, Record<string, unknown>]> = [
    ['currency', 'missing', { currency: undefined }],
    ['currency', 'not a code', { currency: 'B-T-C' }],
    ['prediction', 'missing', { prediction: undefined }],
    ['prediction', 'a string', { prediction: '12' }],
    ['prediction', 'zero', { prediction: 0 }],
    ['numRows', 'negative', { numRows: -5 }],
    ['epochsTrained', 'a fraction', { epochsTrained: 3.5 }],
    ['maxEpochs', 'null', { maxEpochs: null }],
    ['startingLoss', 'a string', { startingLoss: 'NaN' }],
    ['finalLoss', 'missing', { finalLoss: undefined }],
    ['modelType', 'unknown', { modelType: 'transformer' }],
    ['queryType', 'unknown', { queryType: 'future_price' }],
    ['trainingStartTime', 'not a timestamp', { trainingStartTime: 'today' }],
    ['trainingEndTime', 'missing', { trainingEndTime: undefined }],
    ['queryStartTime', 'impossible', { queryStartTime: '2026-02-29 00:00:00' }],
    ['queryEndTime', 'a number', { queryEndTime: 1772323200 }],
    ['sequenceLength', 'null', { sequenceLength: null }],
    ['batchSize', 'a string', { batchSize: '32' }],
    ['dimensionWidth', 'beyond int4', { dimensionWidth: 2 ** 31 }],
    ['queryLoad', 'unknown', { queryLoad: 'stream' }],
    ['queryLoad', 'two elements', { queryLoad: ['batches', 'bulk'] }],
    ['queryLoad', 'an empty array', { queryLoad: [] }],
    ['queryLoad', 'an unknown element', { queryLoad: ['stream'] }],
    ['queryBatchSize', 'negative', { queryBatchSize: -1 }],
    ['trainingDevice', 'unknown', { trainingDevice: 'tpu' }],
    ['trainingDevice', 'cuda style', { trainingDevice: 'cuda:0' }],
    ['shortSequenceLength', 'a string', { shortSequenceLength: 'short' }],
    ['mediumSequenceLength', 'a fraction', { mediumSequenceLength: 1.5 }],
    ['longSequenceLength', 'negative', { longSequenceLength: -90 }],
  ];
  test.each(invalid)('400 naming %s when %s', async (field, _why, override) => {
    const before = await sessionCount();
    const { status, body } = await addSession(trainingSessionRequest(1, override));
    expect(status).toBe(400);
    expect(body.error.code).toBe('validation_error');
    expect(body.error.message).toContain(`'${field}'`);
    expect(body.error.details[0].path).toBe(`body.${field}`);
    expect(await sessionCount()).toBe(before);
  });

  test('needs the write scope', async () => {
    expect((await addSession(trainingSessionRequest(1), harness.readToken)).status).toBe(403);
  });
});

describe('POST /data/training-session/add/bulk', () => {
  test('counts, with 400 and 422 reasons per item', async () => {
    const predictionId = await addPrediction({ currencyCode: 'DOGE' });
    const items = [
      trainingSessionRequest(predictionId, { currency: 'DOGE' }),
      trainingSessionRequest(999999999, { currency: 'DOGE' }),
      trainingSessionRequest(predictionId, { currency: 'DOGE', trainingDevice: 'tpu' }),
      trainingSessionRequest(predictionId, { currency: 'NOPE' }),
      trainingSessionRequest(predictionId, { currency: 'DOGE', queryLoad: ['bulk'] }),
    ];
    const { status, body } = await addSessionsBulk(ndjson(items), 'application/x-ndjson');
    expect(status).toBe(200);
    expect(body).toMatchObject({ received: 5, accepted: 2, duplicates: 0, rejected: 3 });
    expect(
      body.rejections.map((r: { index: number; status: number; code: string }) => [
        r.index,
        r.status,
        r.code,
      ]),
    ).toEqual([
      [1, 422, 'unknown_prediction'],
      [2, 400, 'validation_error'],
      [3, 422, 'unknown_currency'],
    ]);
    const { body: read } = await list('currency=DOGE');
    expect(read.trainingSessions.map((s: { queryLoad: string }) => s.queryLoad).sort()).toEqual([
      'batches',
      'bulk',
    ]);
  });

  test('thousands of sessions in one statement', async () => {
    const predictionId = await addPrediction({ currencyCode: 'TRX' });
    const counted = await startCountingDataModule(harness.runtime);
    try {
      const items = Array.from({ length: 2000 }, (_, i) =>
        trainingSessionRequest(predictionId, { currency: 'TRX', epochsTrained: i }),
      );
      const before = counted.statements();
      const { body } = await post(
        `${counted.url}/data/training-session/add/bulk`,
        harness.writeToken,
        items,
      );
      expect(body.accepted).toBe(2000);
      expect(counted.statements() - before).toBe(2);
    } finally {
      await counted.close();
    }
  });
});

describe('GET /data/training-sessions', () => {
  const ids: Record<string, number> = {};

  beforeAll(async () => {
    const avax = await addPrediction({ currencyCode: 'AVAX', lastUpdated: '2026-06-01 00:00:00' });
    const link = await addPrediction({ currencyCode: 'LINK' });
    const sessions: Array<[string, number, Record<string, unknown>]> = [
      [
        'a',
        avax,
        { currency: 'AVAX', modelType: 'lstm', trainingStartTime: '2026-06-01 08:00:00' },
      ],
      [
        'b',
        avax,
        { currency: 'AVAX', modelType: 'multi_layer', trainingStartTime: '2026-06-01 09:00:00' },
      ],
      [
        'c',
        avax,
        { currency: 'AVAX', modelType: 'lstm', trainingStartTime: '2026-06-01 10:00:00' },
      ],
      [
        'd',
        link,
        { currency: 'LINK', modelType: 'lstm', trainingStartTime: '2026-06-01 09:30:00' },
      ],
    ];
    for (const [name, prediction, overrides] of sessions) {
      expect((await addSession(trainingSessionRequest(prediction, overrides))).status).toBe(200);
      const { body } = await list(`currency=${String(overrides.currency)}&limit=1`);
      ids[name] = body.trainingSessions[0].trainingSessionId;
    }
  });

  const idsOf = (body: { trainingSessions: Array<{ trainingSessionId: number }> }) =>
    body.trainingSessions.map((s) => s.trainingSessionId);

  test('filters by currency, model type and time, newest first', async () => {
    expect(idsOf((await list('currency=AVAX')).body)).toEqual([ids.c, ids.b, ids.a]);
    expect(idsOf((await list('currency=AVAX&modelType=lstm')).body)).toEqual([ids.c, ids.a]);
    const window = 'from=2026-06-01 09:00:00&to=2026-06-01T10:00:00Z';
    expect(idsOf((await list(window)).body)).toEqual([ids.d, ids.b]);
    expect(idsOf((await list(`${window}&modelType=lstm`)).body)).toEqual([ids.d]);
    expect(idsOf((await list(`${window}&currency=LINK`)).body)).toEqual([ids.d]);
  });

  test('the linked prediction comes with each session', async () => {
    const { body } = await list('currency=LINK');
    expect(body.trainingSessions[0].linkedPrediction).toMatchObject({
      currencyCode: 'LINK',
      lastUpdated: '2026-03-01T12:00:00.000Z',
    });
  });

  test('pages with limit and offset', async () => {
    expect(idsOf((await list('currency=AVAX&limit=1&offset=1')).body)).toEqual([ids.b]);
  });

  test('400 naming bad parameters, 403 without the read scope', async () => {
    for (const [query, parameter] of [
      ['modelType=gru', 'modelType'],
      ['currency=B$C', 'currency'],
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['offset=-1', 'offset'],
      ['from=2026-06-02&to=2026-06-01', 'to'],
    ]) {
      const { status, body } = await list(query!);
      expect(status).toBe(400);
      expect(body.error.details[0].path).toBe(`query.${parameter}`);
    }
    expect((await list('', harness.writeToken)).status).toBe(403);
  });
});
