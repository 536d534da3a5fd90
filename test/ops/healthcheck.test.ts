import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, test } from '@jest/globals';

// scripts/healthcheck.mjs is what the container probes run (Dockerfile HEALTHCHECK, compose).

const SCRIPT = fileURLToPath(new URL('../../scripts/healthcheck.mjs', import.meta.url));
let ready: http.Server;
let draining: http.Server;
let closedPort: number;

function serverAnswering(status: number): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    res.writeHead(req.url === '/health/ready' ? status : 404).end();
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}
const portOf = (server: http.Server) => (server.address() as AddressInfo).port;

function probe(args: string[], env: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve) => {
    execFile(process.execPath, [SCRIPT, ...args], { env: { ...process.env, ...env } }, (error) =>
      resolve(error ? Number(error.code ?? 1) : 0),
    );
  });
}

beforeAll(async () => {
  ready = await serverAnswering(200);
  draining = await serverAnswering(503);
  const spare = await serverAnswering(200);
  closedPort = portOf(spare);
  await new Promise((resolve) => spare.close(resolve));
});

afterAll(async () => {
  await Promise.all([ready, draining].map((s) => new Promise((r) => s.close(r))));
});

test('given URLs, every one must answer 2xx', async () => {
  const ok = `http://127.0.0.1:${portOf(ready)}/health/ready`;
  const bad = `http://127.0.0.1:${portOf(draining)}/health/ready`;
  expect(await probe([ok])).toBe(0);
  expect(await probe([bad])).toBe(1);
  expect(await probe([ok, bad])).toBe(1);
  expect(await probe([`http://127.0.0.1:${closedPort}/health/ready`])).toBe(1);
});

test('without URLs, the ports of the configuration that answer must all be ready', async () => {
  const ports = (data: number, api: number, worker: number) => ({
    DATA_PORT: String(data),
    API_PORT: String(api),
    WORKER_METRICS_PORT: String(worker),
  });
  expect(await probe([], ports(portOf(ready), closedPort, closedPort))).toBe(0);
  expect(await probe([], ports(portOf(ready), portOf(draining), closedPort))).toBe(1);
  expect(await probe([], ports(closedPort, closedPort, closedPort))).toBe(1);
});
