// The attacker of bench:load --flood: `clients` concurrent anonymous loops, each asking the
// public /api/currency/history/BTC for two years of minute prices at a varying intervalSeconds
// (slow, uncacheable answers) and firing again as soon as it has an answer (no back-off after a
// 429), each request given up after `timeoutMs`. flood.ts runs this in its own process by
// default (an attacker is not inside the measuring process); run directly, it reads its options
// from FLOOD_* variables and prints its tally as one JSON line.
import { fileURLToPath } from 'node:url';

export interface FloodOptions {
  apiUrl: string;
  clients: number;
  seconds: number;
  timeoutMs: number;
}

export interface FloodTally {
  statuses: Record<string, number>;
  /** Latency (ms) of every refusal (429/503). */
  shed: number[];
  shedWithoutRetryAfter: number;
  /** Latency (ms) of every 2xx answer. */
  answered: number[];
  /** When the last request was given up (epoch ms): abandoned SQL is looked for 2 s after. */
  endedAt: number;
}

export async function runFloodClients(options: FloodOptions): Promise<FloodTally> {
  const ends = Date.now() + options.seconds * 1000;
  const tally: FloodTally = {
    statuses: {},
    shed: [],
    shedWithoutRetryAfter: 0,
    answered: [],
    endedAt: 0,
  };
  const count = (status: number | string) => {
    tally.statuses[status] = (tally.statuses[status] ?? 0) + 1;
  };
  const inFlight = new Set<AbortController>();
  let interval = 1300;
  const floodClient = async () => {
    while (Date.now() < ends) {
      // Varying intervals: every answer is computed, none comes from a cache.
      interval = interval >= 4000 ? 1300 : interval + 1;
      const url = `${options.apiUrl}/api/currency/history/BTC?hours=17520&intervalSeconds=${interval}`;
      const controller = new AbortController();
      inFlight.add(controller);
      const timer = setTimeout(() => controller.abort(), options.timeoutMs);
      const started = performance.now();
      try {
        const response = await fetch(url, { signal: controller.signal });
        await response.arrayBuffer();
        const ms = performance.now() - started;
        count(response.status);
        if (response.status === 429 || response.status === 503) {
          tally.shed.push(ms);
          if (!response.headers.get('retry-after')) tally.shedWithoutRetryAfter++;
        } else if (response.status < 300) tally.answered.push(ms);
      } catch {
        count('gave up');
      } finally {
        clearTimeout(timer);
        inFlight.delete(controller);
      }
    }
  };
  await Promise.all(Array.from({ length: options.clients }, floodClient));
  for (const controller of inFlight) controller.abort();
  tally.endedAt = Date.now();
  return tally;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // The measuring process starts its own clients on this line, so both run for the same time.
  process.stdout.write('flooding\n');
  const tally = await runFloodClients({
    apiUrl: process.env.FLOOD_API_URL ?? '',
    clients: Number(process.env.FLOOD_CLIENTS ?? 200),
    seconds: Number(process.env.FLOOD_SECONDS ?? 20),
    timeoutMs: Number(process.env.FLOOD_CLIENT_TIMEOUT_MS ?? 3000),
  });
  process.stdout.write(`${JSON.stringify(tally)}\n`);
}
