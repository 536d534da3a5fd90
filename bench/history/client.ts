// The HTTP client of bench:history, in its own process as an analyst's tool would be, so its
// allocations (parsing thousands of points) never pause the server being measured. Receives a
// list of URLs over IPC, requests them one after the other, and answers with the timings.
//
// node:http with a keep-alive agent, the body kept as the Buffers it arrives in: the time to the
// last byte is the server's and the network's, as wrk or autocannon report it. fetch, with the
// body read by text(), decoded it on the way: a year of hourly candles (1 MB) from the cache,
// 150 each alternating, twice, p50 8.8–9.0 ms this way against 10.3–10.8 ms, p95 19–22 against
// 24–25 ms. The decoding and parsing are timed apart (withParse).
import { Agent, request } from 'node:http';

interface Job {
  urls: string[];
  token: string;
  warmUp: number;
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

process.on('message', (job: Job | 'exit') => {
  if (job === 'exit') process.exit(0);
  run(job).then(
    (result) => process.send!({ ok: true, ...result }),
    (error: unknown) => process.send!({ ok: false, error: String(error) }),
  );
});

/** The status and the body's Buffers of one GET. */
function get(url: string, token: string) {
  return new Promise<{ status: number; chunks: Buffer[] }>((resolve, reject) => {
    const req = request(url, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, chunks }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Time to the last byte of each body and, beside it, including JSON.parse of the body. */
async function run({ urls, token, warmUp }: Job) {
  const toLastByte: number[] = [];
  const withParse: number[] = [];
  let points = 0;
  for (const [i, url] of urls.entries()) {
    const started = performance.now();
    const { status, chunks } = await get(url, token);
    const lastByte = performance.now() - started;
    const body = Buffer.concat(chunks).toString('utf8');
    if (status !== 200) throw new Error(`HTTP ${status}: ${body}`);
    points = (JSON.parse(body) as unknown[]).length;
    if (i < warmUp) continue;
    toLastByte.push(lastByte);
    withParse.push(performance.now() - started);
  }
  return { toLastByte, withParse, points };
}
