import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { tracesUrl } from '../../src/shared/telemetry.ts';
import { spawnCli, waitForExit } from '../support/cli.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

// A real `platform start` exporting to a local OTLP/HTTP receiver (what a collector or Jaeger
// would be): the request's server span arrives with its route, its database queries as children,
// and the request's log line carries the same trace id.

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: Record<string, unknown> }[];
}

interface Received {
  path: string;
  contentType: string;
  serviceName?: string;
  spans: OtlpSpan[];
}

let runtime: TestRuntime;
let receiver: http.Server;
let endpoint: string;
const received: Received[] = [];

function startReceiver(): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const payload = JSON.parse(body) as {
        resourceSpans: {
          resource: { attributes: { key: string; value: { stringValue?: string } }[] };
          scopeSpans: { spans: OtlpSpan[] }[];
        }[];
      };
      for (const resourceSpans of payload.resourceSpans) {
        received.push({
          path: req.url ?? '',
          contentType: req.headers['content-type'] ?? '',
          serviceName: resourceSpans.resource.attributes.find((a) => a.key === 'service.name')
            ?.value.stringValue,
          spans: resourceSpans.scopeSpans.flatMap((s) => s.spans),
        });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  receiver = await startReceiver();
  endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});

const children: ChildProcessWithoutNullStreams[] = [];

afterAll(async () => {
  // A failed expectation must not leave a platform process behind.
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await new Promise((resolve) => receiver.close(resolve));
  await runtime.dispose();
});

test('the traces URL follows the OTLP exporter specification', () => {
  expect(tracesUrl('http://collector:4318')).toBe('http://collector:4318/v1/traces');
  expect(tracesUrl('http://collector:4318/')).toBe('http://collector:4318/v1/traces');
});

describe('with OTEL_EXPORTER_OTLP_ENDPOINT set', () => {
  test('a request yields a server span named by its route, with its queries, and its log line carries the trace id', async () => {
    const { token } = await createToken(runtime.pool, 'trace-test', ['read']);
    const { child, output } = await spawnCli(
      ['start', '--role', 'data', '--platform.load.currency=false'],
      {
        DATABASE_URL: runtime.database.url,
        DATA_PORT: '0',
        DATA_TOKEN: token, // no fresh token printed: the announce line is enough to wait for
        LOG_LEVEL: 'info',
        OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
        OTEL_SERVICE_NAME: 'platform-data-test',
      },
      /platform is running[^\n]*\n\s+data\s+http:\S+\n/,
    );
    children.push(child);
    const url = /data\s+(http:\/\/\S+)/.exec(output())![1]!;
    const response = await fetch(`${url}/data/currency/history/BTC?hours=1`, {
      headers: { authorization: `Bearer ${token}`, 'x-request-id': 'trace-me-1' },
    });
    expect(response.status).toBe(204);
    child.kill('SIGTERM'); // shutdown flushes the spans still buffered
    expect(await waitForExit(child)).toBe(0);

    expect(received.length).toBeGreaterThan(0);
    expect(received[0]).toMatchObject({
      path: '/v1/traces',
      contentType: 'application/json',
      serviceName: 'platform-data-test',
    });
    const spans = received.flatMap((r) => r.spans);
    const server = spans.find((s) => s.name === 'GET /data/currency/history/:code');
    expect(server).toBeDefined();
    expect(server!.kind).toBe(2); // SERVER
    expect(server!.attributes).toEqual(
      expect.arrayContaining([
        { key: 'http.request.id', value: { stringValue: 'trace-me-1' } },
        { key: 'http.route', value: { stringValue: '/data/currency/history/:code' } },
      ]),
    );
    const inTrace = spans.filter((s) => s.traceId === server!.traceId);
    expect(inTrace.some((s) => s.name.startsWith('pg.query'))).toBe(true);
    // Probes and scrapes are not traced.
    expect(spans.some((s) => /health|metrics/.test(s.name))).toBe(false);

    const requestLine = output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((entry) => entry.msg === 'request' && entry.requestId === 'trace-me-1');
    expect(requestLine).toMatchObject({
      route: '/data/currency/history/:code',
      trace_id: server!.traceId,
    });
  });
});

describe('without OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  test('nothing is exported and log lines carry no trace ids', async () => {
    const before = received.length;
    const { token } = await createToken(runtime.pool, 'no-trace-test', ['read']);
    const { child, output } = await spawnCli(
      ['start', '--role', 'data', '--platform.load.currency=false'],
      { DATABASE_URL: runtime.database.url, DATA_PORT: '0', DATA_TOKEN: token, LOG_LEVEL: 'info' },
      /platform is running[^\n]*\n\s+data\s+http:\S+\n/,
    );
    children.push(child);
    const url = /data\s+(http:\/\/\S+)/.exec(output())![1]!;
    await fetch(`${url}/data/currency/all`, { headers: { authorization: `Bearer ${token}` } });
    child.kill('SIGTERM');
    expect(await waitForExit(child)).toBe(0);
    expect(received.length).toBe(before);
    expect(output()).toMatch(/"msg":"request"/);
    expect(output()).not.toMatch(/trace_id/);
  });
});
