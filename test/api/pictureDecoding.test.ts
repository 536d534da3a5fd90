import { afterAll, beforeAll, expect, test } from '@jest/globals';
import type { Histogram } from 'prom-client';
import { metricsRegistry } from '../../src/shared/metrics.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import type { ApiClient } from '../support/apiClient.ts';
import { solid } from '../support/images.ts';

// Decoding a picture holds its whole bitmap: the API decodes only UPLOAD_DECODE_CONCURRENCY at
// once, queues up to UPLOAD_DECODE_QUEUE more and sheds the rest with 503 + Retry-After. Observed
// through the decode-concurrency histogram (how many decodes ran when each one started).

let queued: ApiHarness;
let shedding: ApiHarness;

beforeAll(async () => {
  [queued, shedding] = await Promise.all([
    startApiHarness({ UPLOAD_DECODE_CONCURRENCY: '2', UPLOAD_DECODE_QUEUE: '100' }),
    startApiHarness({ UPLOAD_DECODE_CONCURRENCY: '1', UPLOAD_DECODE_QUEUE: '0' }),
  ]);
});

afterAll(async () => {
  await Promise.all([queued.close(), shedding.close()]);
});

function upload(client: ApiClient, bytes: Buffer) {
  const body = new FormData();
  body.append('file', new Blob([new Uint8Array(bytes)], { type: 'image/png' }), 'me.png');
  return client.request('POST', '/api/account/image/upload', { body });
}

/** Decodes observed so far, in total and with at most `limit` running at their start. */
async function decodeCounts(limit: number) {
  const metric = metricsRegistry.getSingleMetric('api_picture_decode_concurrency') as Histogram;
  const { values } = await metric.get();
  const count = values.find((v) => v.metricName === 'api_picture_decode_concurrency_count');
  const atMost = values.find(
    (v) => v.metricName === 'api_picture_decode_concurrency_bucket' && v.labels.le === limit,
  );
  return { total: count?.value ?? 0, withinLimit: atMost?.value ?? 0 };
}

test('many concurrent uploads are all stored, never more than the limit decoded at once', async () => {
  const picture = await solid(3000, 2500).png().toBuffer();
  const users = await Promise.all(Array.from({ length: 8 }, () => queued.signedInClient()));
  const before = await decodeCounts(2);
  const answers = await Promise.all(users.map(({ client }) => upload(client, picture)));
  expect(answers.map((answer) => answer.status)).toEqual(users.map(() => 200));
  const after = await decodeCounts(2);
  expect(after.total - before.total).toBe(8);
  expect(after.withinLimit - before.withinLimit).toBe(8);
  expect(queued.service.pictureDecoding.active).toBe(0);
  expect(queued.service.pictureDecoding.queued).toBe(0);
});

test('with every slot busy and the queue full, an upload gets 503 with Retry-After at once; later it is stored', async () => {
  const { client, userId } = await shedding.signedInClient();
  const picture = await solid(40, 30).png().toBuffer();
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const occupying = shedding.service.pictureDecoding.run(() => held);
  try {
    const refused = await upload(client, picture);
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('overloaded');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  } finally {
    release();
    await occupying;
  }
  expect((await upload(client, picture)).status).toBe(200);
  const stored = await client.get(`/api/account/get/${userId}/has-profile-picture`);
  expect(stored.status).toBe(200);
});
