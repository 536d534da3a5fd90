import { afterAll, expect, jest, test } from '@jest/globals';
import http from 'node:http';
import Koa from 'koa';
import { LISTEN_BACKLOG, type RunningServer } from '../../src/shared/http/server.ts';
import { serve } from '../support/http.ts';

// Every service listens with a deep accept queue: under a flood of connections Node's default
// (511) overflowed, and each overflow is a connection attempt the kernel drops and the client
// retries a second later (sign-ins and snapshots included). The kernel's own view of it (ss's
// Send-Q) needs a tool outside Node; this checks what the servers ask the kernel for.

let server: RunningServer | undefined;

afterAll(async () => {
  await server?.close();
});

test('the HTTP servers listen with a backlog of 4096', async () => {
  const listen = jest.spyOn(http.Server.prototype, 'listen');
  try {
    server = await serve(new Koa());
    expect(listen).toHaveBeenCalledWith(
      expect.objectContaining({ backlog: LISTEN_BACKLOG, port: 0, host: '127.0.0.1' }),
      expect.any(Function),
    );
  } finally {
    listen.mockRestore();
  }
  expect(LISTEN_BACKLOG).toBe(4096);
  expect((await fetch(`${server.url}/`)).status).toBe(404);
});
