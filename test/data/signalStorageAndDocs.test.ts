import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { createDataService } from '../../src/data/service.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import { getJson, serve } from '../support/http.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

let runtime: TestRuntime;
let server: RunningServer;

beforeAll(async () => {
  runtime = await createTestRuntime();
  server = await serve(createDataService(runtime).app);
});

afterAll(async () => {
  await server.close();
  await runtime.dispose();
});

test('/openapi.json documents every signal route with its bodies and errors', async () => {
  const { status, body } = await getJson(`${server.url}/openapi.json`);
  expect(status).toBe(200);
  const responses = (path: string, method: string) =>
    Object.keys(body.paths[path][method].responses).sort();
  expect(responses('/data/predictions/add', 'post')).toEqual(
    ['202', '400', '401', '403', '413', '415', '422', '503'].sort(),
  );
  expect(responses('/data/news-sentiment/add', 'post')).toContain('200');
  expect(responses('/data/training-session/add', 'post')).toContain('422');
  for (const path of [
    '/data/news-sentiment/add/bulk',
    '/data/predictions/add/bulk',
    '/data/training-session/add/bulk',
  ]) {
    const operation = body.paths[path].post;
    expect(Object.keys(operation.requestBody.content).sort()).toEqual([
      'application/json',
      'application/x-ndjson',
    ]);
    expect(operation.description).toContain('10000 items and 10 MiB');
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['200', '413', '415']));
  }
  for (const path of ['/data/predictions', '/data/news-sentiment', '/data/training-sessions']) {
    expect(body.paths[path].get.responses['200']).toBeDefined();
  }
  const schemas = body.components.schemas;
  for (const name of [
    'NewsSentimentRequest',
    'PricePredictionRequest',
    'TrainingSessionRequest',
    'PredictionIdResponse',
    'OperationSuccessfulResponse',
    'BulkOutcome',
    'EvaluatedPrediction',
    'TrainingSession',
  ]) {
    expect(schemas[name]).toBeDefined();
  }
  expect(schemas.TrainingSessionRequest.required).toEqual(
    expect.arrayContaining(['currency', 'prediction', 'queryLoad', 'trainingDevice']),
  );
  expect(schemas.TrainingSessionRequest.required).not.toContain('shortSequenceLength');
});

test('signal inputs are hypertables with the indexes their reads use', async () => {
  const dimensions = await runtime.pool.any(sql.type(
    z.object({ table: z.string(), column: z.string(), interval: z.string() }),
  )`
    SELECT hypertable_name AS table, column_name AS column, time_interval::text AS interval
    FROM timescaledb_information.dimensions
    WHERE hypertable_name IN ('news_sentiment', 'predictions', 'training_sessions')
    ORDER BY 1
  `);
  expect(dimensions).toEqual([
    { table: 'news_sentiment', column: 'publish_date', interval: '30 days' },
    { table: 'predictions', column: 'last_updated', interval: '30 days' },
    { table: 'training_sessions', column: 'training_start_time', interval: '30 days' },
  ]);
  const indexes = await runtime.pool.anyFirst(sql.type(z.object({ definition: z.string() }))`
    SELECT regexp_replace(indexdef, '^.* USING ', '') AS definition FROM pg_indexes
    WHERE tablename IN ('news_sentiment', 'predictions', 'training_sessions')
    ORDER BY tablename, indexname
  `);
  expect(indexes).toEqual([
    'btree (article_id, publish_date)',
    'btree (publish_date DESC)',
    'btree (currency_code, last_updated)',
    'btree (id, last_updated)',
    'btree (currency_code, training_start_time)',
    'btree (model_type, training_start_time DESC)',
    'btree (id, training_start_time)',
    'btree (prediction_id, prediction_time)',
    'btree (training_start_time DESC)',
  ]);
});
