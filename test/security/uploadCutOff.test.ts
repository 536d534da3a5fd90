import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { streamChunked, type CutOffOutcome } from '../support/chunkedUpload.ts';
import { startDataModule, type DataModuleHarness } from '../support/dataModule.ts';

// An oversized chunked upload is refused as soon as it passes the limit: 413, Connection: close,
// and the connection closed, after the server has taken little more than the limit (what kernel
// buffers hold on the way), not the whole gigabyte the client would send.

const LIMIT = 1024 * 1024;
const GIB = 1024 * 1024 * 1024;
/** Socket buffers of both ends on loopback hold a few MiB; a server reading on holds far more. */
const SLACK = 24 * 1024 * 1024;

let data: DataModuleHarness;
let api: ApiHarness;
let cookie: string;

beforeAll(async () => {
  data = await startDataModule({
    PRICE_BULK_MAX_BYTES: String(LIMIT),
    SIGNAL_BULK_MAX_BYTES: String(LIMIT),
  });
  api = await startApiHarness({ UPLOAD_MAX_BYTES: String(LIMIT) });
  cookie = (await api.signedInClient()).client.cookieHeader();
});

afterAll(async () => {
  await data.close();
  await api.close();
});

function expectCutOff(outcome: CutOffOutcome) {
  expect(outcome.status).toBe(413);
  expect(outcome.head).toContain('connection: close');
  expect(outcome.closed).toBe(true);
  expect(outcome.bytesSent).toBeGreaterThan(LIMIT);
  expect(outcome.bytesSent).toBeLessThan(LIMIT + SLACK);
}

describe('a chunked body over the limit is cut off', () => {
  test.each([
    ['/data/prices/bulk', 'application/json'],
    ['/data/predictions/add/bulk', 'application/x-ndjson'],
    ['/data/news-sentiment/add/bulk', 'application/json'],
    ['/data/predictions/add', 'application/json'],
  ])('data module: %s', async (path, type) => {
    const outcome = await streamChunked({
      url: data.server.url,
      path,
      headers: { authorization: `Bearer ${data.writeToken}`, 'content-type': type },
      totalBytes: GIB,
    });
    expectCutOff(outcome);
  });

  test('API: profile picture upload', async () => {
    const boundary = 'cutoffboundary';
    const outcome = await streamChunked({
      url: api.url,
      path: '/api/account/image/upload',
      headers: { cookie, 'content-type': `multipart/form-data; boundary=${boundary}` },
      prefix:
        `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.png"\r\n` +
        'content-type: image/png\r\n\r\n',
      totalBytes: GIB,
    });
    expectCutOff(outcome);
  });

  test('API: a JSON body', async () => {
    const outcome = await streamChunked({
      url: api.url,
      path: '/api/portfolio/add',
      headers: { cookie, 'content-type': 'application/json' },
      totalBytes: GIB,
    });
    expectCutOff(outcome);
  });
});
