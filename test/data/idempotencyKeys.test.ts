import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { getJson } from '../support/http.ts';
import { startDataModule, type DataModuleHarness } from '../support/dataModule.ts';
import {
  newsEvent,
  ndjson,
  post,
  predictionRequest,
  trainingSessionRequest,
} from '../support/signals.ts';

// Idempotency-Key on the signal writes: parallel retries of one request write once and all get
// the first answer; a reused key with another body is refused; keys are per token and expire.

let harness: DataModuleHarness;
let otherToken: string;

beforeAll(async () => {
  harness = await startDataModule();
  otherToken = (await createToken(harness.runtime.pool, 'other-writer', ['write'])).token;
});

afterAll(async () => {
  await harness.close();
});

const url = (path: string) => `${harness.server.url}${path}`;
const send = (
  path: string,
  body: unknown,
  key?: string,
  token = harness.writeToken,
  contentType = 'application/json',
) => post(url(path), token, body, contentType, key ? { 'idempotency-key': key } : {});

const count = (
  table: 'predictions' | 'training_sessions' | 'news_sentiment',
  where = sql.fragment`true`,
) =>
  harness.runtime.pool.oneFirst(
    sql.type(
      z.object({ n: z.number() }),
    )`SELECT count(*) AS n FROM ${sql.identifier([table])} WHERE ${where}`,
  );

/** Fires the same request `times` times at once. */
const burst = <T>(times: number, request: () => Promise<T>) =>
  Promise.all(Array.from({ length: times }, request));

function expectOneOriginal(answers: Array<Awaited<ReturnType<typeof send>>>, status: number) {
  for (const answer of answers) {
    expect(answer.status).toBe(status);
    expect(answer.body).toEqual(answers[0]!.body);
  }
  const replayed = answers.filter((a) => a.headers.get('idempotent-replayed') === 'true');
  expect(replayed).toHaveLength(answers.length - 1);
}

describe('Idempotency-Key on POST /data/predictions/add', () => {
  test('parallel retries with one key store exactly one prediction and share its answer', async () => {
    const body = predictionRequest({ numRows: 7001 });
    const answers = await burst(8, () => send('/data/predictions/add', body, 'pred-burst-1'));
    expectOneOriginal(answers, 202);
    expect(answers[0]!.body).toEqual({ predictionId: expect.any(Number) });
    expect(await count('predictions', sql.fragment`num_rows = 7001`)).toBe(1);

    // A later retry still gets the original answer and writes nothing.
    const later = await send('/data/predictions/add', body, 'pred-burst-1');
    expect(later.status).toBe(202);
    expect(later.body).toEqual(answers[0]!.body);
    expect(await count('predictions', sql.fragment`num_rows = 7001`)).toBe(1);
  });

  test('the same key with another body is a 422 and stores nothing', async () => {
    const first = await send('/data/predictions/add', predictionRequest({ numRows: 7002 }), 'k2');
    expect(first.status).toBe(202);
    const other = await send('/data/predictions/add', predictionRequest({ numRows: 7003 }), 'k2');
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    expect(other.body.error.message).toMatch(/Idempotency-Key 'k2' was already used/);
    expect(await count('predictions', sql.fragment`num_rows = 7003`)).toBe(0);
    // The same key on another route is another request too.
    const elsewhere = await send('/data/news-sentiment/add', newsEvent({ articleId: 9002 }), 'k2');
    expect(elsewhere.status).toBe(422);
    expect(await count('news_sentiment', sql.fragment`article_id = 9002`)).toBe(0);
  });

  test('keys belong to one token: another token with the same key writes its own row', async () => {
    const body = predictionRequest({ numRows: 7004 });
    expect((await send('/data/predictions/add', body, 'shared-key')).status).toBe(202);
    const other = await send('/data/predictions/add', body, 'shared-key', otherToken);
    expect(other.status).toBe(202);
    expect(other.headers.get('idempotent-replayed')).toBeNull();
    expect(await count('predictions', sql.fragment`num_rows = 7004`)).toBe(2);
  });

  test('a write that failed keeps no key: its retry is tried again', async () => {
    const unknown = predictionRequest({ currencyCode: 'NOPE', numRows: 7005 });
    const failed = await send('/data/predictions/add', unknown, 'k-failed');
    expect(failed.status).toBe(422);
    expect(failed.body.error.code).toBe('unknown_currency');
    const fixed = await send('/data/predictions/add', unknown, 'k-failed');
    expect(fixed.status).toBe(422);
    expect(fixed.body.error.code).toBe('unknown_currency');
  });

  test('keys expire after 24 hours; expired keys are deleted by later writes', async () => {
    const body = predictionRequest({ numRows: 7006 });
    expect((await send('/data/predictions/add', body, 'k-old')).status).toBe(202);
    await harness.runtime.pool.query(sql.unsafe`
      UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'k-old'`);
    await harness.runtime.pool.query(sql.unsafe`
      INSERT INTO idempotency_keys (scope, key, operation, request_hash, status, answer, created_at)
      VALUES ('token:gone', 'stale', 'addPrediction', '\\x00', 202, '{}', now() - interval '3 days')`);
    const again = await send('/data/predictions/add', body, 'k-old');
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(await count('predictions', sql.fragment`num_rows = 7006`)).toBe(2);
    const left = await harness.runtime.pool.anyFirst(sql.type(z.object({ key: z.string() }))`
      SELECT key FROM idempotency_keys WHERE created_at < now() - interval '24 hours'`);
    expect(left).toEqual([]);
  });

  test('a malformed key is a 400 naming the header', async () => {
    const answer = await send('/data/predictions/add', predictionRequest(), 'has space');
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toMatch(/header 'Idempotency-Key'/);
  });
});

describe('Idempotency-Key on the other signal writes', () => {
  test('training sessions, single and bulk: one row per key under parallel retries', async () => {
    const prediction = await send('/data/predictions/add', predictionRequest({ numRows: 7100 }));
    const id = prediction.body.predictionId as number;
    const single = trainingSessionRequest(id, { epochsTrained: 71 });
    const singles = await burst(6, () => send('/data/training-session/add', single, 'ts-1'));
    expectOneOriginal(singles, 200);
    expect(await count('training_sessions', sql.fragment`epochs_trained = 71`)).toBe(1);

    const items = [72, 73].map((epochs) => trainingSessionRequest(id, { epochsTrained: epochs }));
    const bulks = await burst(6, () =>
      send(
        '/data/training-session/add/bulk',
        ndjson(items),
        'ts-2',
        undefined,
        'application/x-ndjson',
      ),
    );
    expectOneOriginal(bulks, 200);
    expect(bulks[0]!.body).toMatchObject({ received: 2, accepted: 2 });
    expect(await count('training_sessions', sql.fragment`epochs_trained IN (72, 73)`)).toBe(2);
  });

  test('predictions bulk: parallel retries store the items once and replay their ids', async () => {
    const items = [7201, 7202, 7203].map((numRows) => predictionRequest({ numRows }));
    const answers = await burst(6, () => send('/data/predictions/add/bulk', items, 'pb-1'));
    expectOneOriginal(answers, 200);
    expect(answers[0]!.body.predictionIds).toHaveLength(3);
    expect(await count('predictions', sql.fragment`num_rows BETWEEN 7201 AND 7203`)).toBe(3);
  });

  test('news sentiment, single and bulk: the retry gets the first answer', async () => {
    const singles = await burst(6, () =>
      send('/data/news-sentiment/add', newsEvent({ articleId: 9101 }), 'ns-1'),
    );
    expectOneOriginal(singles, 200);
    const items = [9102, 9103].map((articleId) => newsEvent({ articleId }));
    const bulks = await burst(6, () => send('/data/news-sentiment/add/bulk', items, 'ns-2'));
    expectOneOriginal(bulks, 200);
    // Without the key a repeat would answer "2 duplicates"; with it, the original "2 accepted".
    expect(bulks.map((b) => b.body.accepted)).toEqual([2, 2, 2, 2, 2, 2]);
    expect(await count('news_sentiment', sql.fragment`article_id BETWEEN 9101 AND 9103`)).toBe(3);
  });

  test('OpenAPI documents the header on every signal write', async () => {
    const { body } = await getJson(url('/openapi.json'));
    const writes = [
      '/data/predictions/add',
      '/data/predictions/add/bulk',
      '/data/news-sentiment/add',
      '/data/news-sentiment/add/bulk',
      '/data/training-session/add',
      '/data/training-session/add/bulk',
    ];
    for (const path of writes) {
      const parameters = body.paths[path].post.parameters as Array<{ in: string; name: string }>;
      expect(parameters).toContainEqual(
        expect.objectContaining({ in: 'header', name: 'Idempotency-Key' }),
      );
    }
  });
});
