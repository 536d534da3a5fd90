import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// A local stand-in for an exchange's public API: it replays scripted answers per path, counts
// the requests and can hang to provoke time-outs. Tests never reach the real exchanges.

export interface FakeAnswer {
  status?: number;
  headers?: Record<string, string>;
  /** Sent as is when a string, as JSON otherwise. */
  body?: unknown;
  /** Never answers (the client's time-out must fire). */
  hang?: boolean;
}

export interface FakeExchange {
  url: string;
  /** Paths (with query) of the requests received, in order. */
  requests: string[];
  /** Answers for `path`, one per request; the last one repeats. */
  script(path: string, ...answers: FakeAnswer[]): void;
  close(): Promise<void>;
}

export async function startFakeExchange(): Promise<FakeExchange> {
  const scripts = new Map<string, FakeAnswer[]>();
  const requests: string[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests.push(req.url ?? '');
    const path = new URL(req.url ?? '/', 'http://fake').pathname;
    const queue = scripts.get(path);
    const answer = (queue && queue.length > 1 ? queue.shift() : queue?.[0]) ?? {
      status: 404,
      body: { message: 'not found' },
    };
    if (answer.hang) return;
    const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? {});
    res.writeHead(answer.status ?? 200, {
      'content-type': 'application/json',
      ...answer.headers,
    });
    res.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    script: (path, ...answers) => scripts.set(path, answers),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A recorded-looking answer from test/fixtures/exchanges. */
export function fixture(name: string): unknown {
  return JSON.parse(
    readFileSync(new URL(`../fixtures/exchanges/${name}`, import.meta.url), 'utf8'),
  ) as unknown;
}
