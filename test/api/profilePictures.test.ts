import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import sharp from 'sharp';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import type { ApiClient } from '../support/apiClient.ts';
import { HTML_PAGE, noisePng, pixelFloodPng, solid, SVG_WITH_SCRIPT } from '../support/images.ts';

const MAX_BYTES = 100_000;
const MAX_PIXELS = 1_000_000;

let harness: ApiHarness;
let me: { client: ApiClient; userId: number };
let other: { client: ApiClient; userId: number };

beforeAll(async () => {
  harness = await startApiHarness({
    UPLOAD_MAX_BYTES: String(MAX_BYTES),
    UPLOAD_MAX_PIXELS: String(MAX_PIXELS),
  });
  me = await harness.signedInClient();
  other = await harness.signedInClient();
});

afterAll(async () => {
  await harness.close();
});

function form(bytes: Buffer, filename = 'me.png', type = 'image/png', field = 'file') {
  const body = new FormData();
  body.append(field, new Blob([new Uint8Array(bytes)], { type }), filename);
  return body;
}

function upload(
  client: ApiClient,
  body: RequestInit['body'],
  headers: Record<string, string> = {},
) {
  return client.request('POST', '/api/account/image/upload', { body, headers });
}

const picturePath = (id: number | string) => `/api/account/get/${id}/profile-picture`;
const hasPath = (id: number | string) => `/api/account/get/${id}/has-profile-picture`;

describe('accepted pictures', () => {
  test.each([
    ['PNG', 'image/png', () => solid(40, 30).png().toBuffer()],
    ['JPEG', 'image/jpeg', () => solid(40, 30).jpeg().toBuffer()],
    ['GIF', 'image/gif', () => solid(40, 30).gif().toBuffer()],
    ['WebP', 'image/webp', () => solid(40, 30).webp().toBuffer()],
  ])('%s is stored re-encoded and served with its type', async (_, type, make) => {
    const original = await make();
    // The declared type and name are ignored: only the content counts.
    const response = await upload(
      me.client,
      form(original, 'whatever.bin', 'application/octet-stream'),
    );
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ successful: true });
    const served = await me.client.get(picturePath(me.userId));
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe(type);
    expect(served.headers.get('x-content-type-options')).toBe('nosniff');
    const info = await sharp(served.bytes).metadata();
    expect([info.width, info.height]).toEqual([40, 30]);
    expect((await me.client.get(hasPath(me.userId))).body).toEqual({ hasProfilePicture: true });
  });

  test('metadata is stripped and the orientation applied', async () => {
    const tagged = await solid(60, 20)
      .jpeg()
      .withMetadata({ orientation: 6 })
      .withExif({ IFD0: { Copyright: 'secret-owner', ImageDescription: 'home at 52.52N 13.40E' } })
      .toBuffer();
    expect((await sharp(tagged).metadata()).exif).toBeDefined();
    expect((await upload(me.client, form(tagged, 'photo.jpg', 'image/jpeg'))).status).toBe(200);
    const served = await me.client.get(picturePath(me.userId));
    const info = await sharp(served.bytes).metadata();
    expect(info.exif).toBeUndefined();
    expect(info.orientation).toBeUndefined();
    expect([info.width, info.height]).toEqual([20, 60]);
    expect(served.bytes.includes(Buffer.from('secret-owner'))).toBe(false);
  });

  test('large pictures are scaled down to at most 1024 pixels a side', async () => {
    const big = await solid(1000, 600).png().toBuffer();
    await upload(me.client, form(big));
    const small = await solid(1000, 600).resize(1000, 600).png().toBuffer();
    expect(small.length).toBeLessThan(MAX_BYTES);
    const info = await sharp((await me.client.get(picturePath(me.userId))).bytes).metadata();
    expect(Math.max(info.width, info.height)).toBeLessThanOrEqual(1024);
  });
});

describe('serving', () => {
  test('ETag and Cache-Control, 304 for a matching If-None-Match, a new ETag after a new upload', async () => {
    const { client, userId } = await harness.signedInClient();
    await upload(client, form(await solid(10, 10, '#ff0000').png().toBuffer()));
    const first = await client.get(picturePath(userId));
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(first.headers.get('cache-control')).toBe('private, no-cache');
    const again = await client.get(picturePath(userId), { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.bytes.length).toBe(0);
    const stale = await client.get(picturePath(userId), {
      headers: { 'if-none-match': '"other"' },
    });
    expect(stale.status).toBe(200);

    await upload(client, form(await solid(10, 10, '#0000ff').webp().toBuffer()));
    const replaced = await client.get(picturePath(userId), { headers: { 'if-none-match': etag } });
    expect(replaced.status).toBe(200);
    expect(replaced.headers.get('content-type')).toBe('image/webp');
    expect(replaced.headers.get('etag')).not.toBe(etag);
  });

  test("any signed-in user sees another user's picture", async () => {
    await upload(other.client, form(await solid(12, 12).png().toBuffer()));
    expect((await me.client.get(picturePath(other.userId))).status).toBe(200);
    expect((await me.client.get(hasPath(other.userId))).body).toEqual({ hasProfilePicture: true });
  });

  test('404 when the user has no picture or does not exist; has-profile-picture false or 404', async () => {
    const { userId } = await harness.signedInClient();
    const none = await me.client.get(picturePath(userId));
    expect(none.status).toBe(404);
    expect(none.body.error.code).toBe('no_profile_picture');
    expect((await me.client.get(hasPath(userId))).body).toEqual({ hasProfilePicture: false });
    expect((await me.client.get(picturePath(987654321))).status).toBe(404);
    const unknown = await me.client.get(hasPath(987654321));
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('unknown_user');
  });

  test.each(['0', '-1', 'abc', '1.5', '1e3', '9999999999999999'])(
    '400 for the id %s',
    async (id) => {
      for (const path of [picturePath(id), hasPath(id)]) {
        const response = await me.client.get(path);
        expect(response.status).toBe(400);
        expect(response.body.error.details[0].path).toBe('params.id');
      }
    },
  );

  test('401 without a session', async () => {
    for (const path of [picturePath(me.userId), hasPath(me.userId)]) {
      expect((await harness.client().get(path)).status).toBe(401);
    }
    const response = await upload(harness.client(), form(await solid(5, 5).png().toBuffer()));
    expect(response.status).toBe(401);
  });
});

describe('refused uploads leave the earlier picture in place', () => {
  let victim: { client: ApiClient; userId: number };
  let etag: string;

  beforeAll(async () => {
    victim = await harness.signedInClient();
    await upload(victim.client, form(await solid(16, 16).png().toBuffer()));
    etag = (await victim.client.get(picturePath(victim.userId))).headers.get('etag')!;
  });

  async function expectUnchanged() {
    const served = await victim.client.get(picturePath(victim.userId));
    expect(served.headers.get('etag')).toBe(etag);
  }

  test('413 for a file over the byte limit (declared length)', async () => {
    const big = await noisePng(200, 200);
    expect(big.length).toBeGreaterThan(MAX_BYTES);
    const response = await upload(victim.client, form(big));
    expect(response.status).toBe(413);
    expect(response.body.error.code).toBe('payload_too_large');
    await expectUnchanged();
  });

  test('413 for a file over the byte limit sent without a length (chunked)', async () => {
    const big = await noisePng(200, 200);
    const request = new Request('http://x/', { method: 'POST', body: form(big) });
    const type = request.headers.get('content-type')!;
    const bytes = Buffer.from(await request.arrayBuffer());
    const stream = new ReadableStream({
      start(controller) {
        for (let at = 0; at < bytes.length; at += 16_384) {
          controller.enqueue(new Uint8Array(bytes.subarray(at, at + 16_384)));
        }
        controller.close();
      },
    });
    const response = await fetch(`${harness.url}/api/account/image/upload`, {
      method: 'POST',
      body: stream,
      duplex: 'half',
      headers: { 'content-type': type, cookie: victim.client.cookieHeader() },
    });
    expect(response.status).toBe(413);
    await response.arrayBuffer();
    await expectUnchanged();
  });

  test('413 for too many pixels, in a small file', async () => {
    const wide = await solid(1500, 1000).png().toBuffer();
    expect(wide.length).toBeLessThan(MAX_BYTES);
    const response = await upload(victim.client, form(wide));
    expect(response.status).toBe(413);
    expect(response.body.error.message).toMatch(/pixels/);
    await expectUnchanged();
  });

  test('413 for a pixel flood: a tiny PNG announcing 50000 × 50000 pixels', async () => {
    const flood = pixelFloodPng(50_000, 50_000);
    expect(flood.length).toBeLessThan(1000);
    const response = await upload(victim.client, form(flood));
    expect(response.status).toBe(413);
    await expectUnchanged();
  });

  test.each([
    ['an SVG with a script named .png', SVG_WITH_SCRIPT, 'avatar.png'],
    ['an HTML page named .png', HTML_PAGE, 'avatar.png'],
    ['a PDF', Buffer.from('%PDF-1.4\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF'), 'avatar.png'],
    ['an empty file', Buffer.alloc(0), 'avatar.png'],
  ])('415 for %s', async (_, bytes, name) => {
    const response = await upload(victim.client, form(bytes, name, 'image/png'));
    expect(response.status).toBe(415);
    expect(response.body.error.code).toBe('unsupported_media_type');
    await expectUnchanged();
  });

  test.each([
    ['PNG', () => solid(64, 64).png().toBuffer()],
    ['JPEG', () => solid(64, 64).jpeg().toBuffer()],
    ['GIF', () => noisePng(32, 32).then((p) => sharp(p).gif().toBuffer())],
    ['WebP', () => noisePng(32, 32).then((p) => sharp(p).webp().toBuffer())],
  ])('415 for a truncated %s', async (_, make) => {
    const whole = await make();
    const truncated = whole.subarray(0, Math.floor(whole.length * 0.6));
    const response = await upload(victim.client, form(truncated));
    expect(response.status).toBe(415);
    await expectUnchanged();
  });

  test('415 for a request that is not multipart', async () => {
    const response = await victim.client.post('/api/account/image/upload', { file: 'aGVsbG8=' });
    expect(response.status).toBe(415);
  });

  test('400 when the part is not named file', async () => {
    const png = await solid(8, 8).png().toBuffer();
    const response = await upload(victim.client, form(png, 'me.png', 'image/png', 'avatar'));
    expect(response.status).toBe(400);
    expect(response.body.error.details[0].path).toBe('body.file');
    await expectUnchanged();
  });

  test('400 for a malformed multipart body', async () => {
    const response = await upload(victim.client, 'not multipart at all', {
      'content-type': 'multipart/form-data',
    });
    expect(response.status).toBe(400);
  });
});
