import { afterAll, beforeAll, expect, test } from '@jest/globals';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { respondWithJsonPieces } from '../../src/data/routes/jsonPieces.ts';
import { ResponseBuffers } from '../../src/shared/http/responseBuffers.ts';

// Bodies larger than loopback's socket buffers, so that a response whose reader pauses is still
// being written when the next one is built.
const LARGE = 24 * 1024 * 1024;
const buffers = new ResponseBuffers(4, 64 * 1024 * 1024);
let server: http.Server;
let port: number;
/** Resolves once the server has built an answer of `fill` (and taken its Buffer). */
const built = new Map<string, () => void>();
const answerBuilt = (fill: string) => new Promise<void>((resolve) => built.set(fill, resolve));

beforeAll(async () => {
  const app = new Koa();
  app.use((ctx) => {
    const fill = ctx.query.fill === 'b' ? 'b' : 'a';
    const size = ctx.query.size === 'large' ? LARGE : 16;
    // A cache's pieces are UTF-8 Buffers among the strings.
    const kept = Buffer.from('"€ ü"', 'utf8');
    respondWithJsonPieces(ctx, ['["', fill.repeat(size), '",', kept, ']'], buffers);
    built.get(fill)?.();
  });
  const handle = app.callback();
  server = http.createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

test('the body is the pieces (strings and Buffers) joined, encoded as UTF-8, as JSON', async () => {
  const response = await fetch(`http://127.0.0.1:${port}/?fill=a`);
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(await response.json()).toEqual(['a'.repeat(16), '€ ü']);
});

/** Sends a GET on a raw socket and reads nothing until `read()` is called. */
function pausedRequest(path: string) {
  const socket = net.connect(port, '127.0.0.1');
  socket.pause();
  socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
  return {
    read: () =>
      new Promise<Buffer>((resolve, reject) => {
        const chunks: Buffer[] = [];
        socket.on('data', (chunk: Buffer) => chunks.push(chunk));
        socket.on('end', () => resolve(Buffer.concat(chunks)));
        socket.on('error', reject);
        socket.resume();
      }),
  };
}

test('a response still being sent keeps its Buffer: the next answer is written elsewhere', async () => {
  const firstBuilt = answerBuilt('a');
  const slow = pausedRequest('/?fill=a&size=large');
  // The first answer holds its Buffer, its write pending on the paused socket.
  await firstBuilt;
  const second = await fetch(`http://127.0.0.1:${port}/?fill=b&size=large`);
  expect(((await second.json()) as string[])[0]).toBe('b'.repeat(LARGE));

  const raw = await slow.read();
  const body = raw.subarray(raw.indexOf('\r\n\r\n') + 4).toString('utf8');
  const [first] = JSON.parse(body) as string[];
  expect(first!.length).toBe(LARGE);
  expect(first!.includes('b')).toBe(false);
});

test('a finished response gives its Buffer back for the next one', async () => {
  const idleBefore = buffers.idle;
  await (await fetch(`http://127.0.0.1:${port}/?fill=a`)).arrayBuffer();
  await new Promise((resolve) => setImmediate(resolve));
  // It took an idle Buffer (or a new one, when none was idle) and put it back.
  expect(buffers.idle).toBe(Math.max(1, idleBefore));
});
