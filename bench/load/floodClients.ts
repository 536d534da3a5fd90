// The attacker of bench:load --flood: `clients` concurrent anonymous loops, each asking the
// public /api/currency/history/BTC for two years of minute prices at a varying intervalSeconds
// (slow, uncacheable answers) and firing again as soon as it has an answer (no back-off after a
// 429), each request given up after `timeoutMs`. flood.ts runs this in its own process by
// default (an attacker is not inside the measuring process); run directly, it reads its options
// from FLOOD_* variables and prints its tally as one JSON line. With `addresses` (FLOOD_ADDRESSES)
// client i sends from 127.0.0.(2 + i mod addresses) instead of 127.0.0.1 (floodHttp.ts).
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { agentsFor, floodUrl, get } from './floodHttp.ts';

export interface FloodOptions {
  apiUrl: string;
  clients: number;
  seconds: number;
  timeoutMs: number;
  /** Source addresses to spread the clients over; 0: all from 127.0.0.1. */
  addresses: number;
}

/** A process's event-loop delay over the flood (ms): its own starvation, part of what it times. */
export interface LoopDelay {
  p50: number;
  p99: number;
  max: number;
}

export function loopDelayMonitor(): () => LoopDelay {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  return () => {
    histogram.disable();
    const ms = (ns: number) => Math.round(ns / 1e5) / 10;
    return {
      p50: ms(histogram.percentile(50)),
      p99: ms(histogram.percentile(99)),
      max: ms(histogram.max),
    };
  };
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
  loopDelay: LoopDelay;
}

export async function runFloodClients(options: FloodOptions): Promise<FloodTally> {
  const ends = Date.now() + options.seconds * 1000;
  const loopDelay = loopDelayMonitor();
  const agents = agentsFor(options.addresses);
  const tally: FloodTally = {
    statuses: {},
    shed: [],
    shedWithoutRetryAfter: 0,
    answered: [],
    endedAt: 0,
    loopDelay: { p50: NaN, p99: NaN, max: NaN },
  };
  const count = (status: number | string) => {
    tally.statuses[status] = (tally.statuses[status] ?? 0) + 1;
  };
  const inFlight = new Set<AbortController>();
  let interval = 1300;
  const floodClient = async (_: unknown, client: number) => {
    const agent = agents[client % agents.length]!;
    while (Date.now() < ends) {
      // Varying intervals: every answer is computed, none comes from a cache.
      interval = interval >= 4000 ? 1300 : interval + 1;
      const url = floodUrl(options.apiUrl, interval);
      const controller = new AbortController();
      inFlight.add(controller);
      const timer = setTimeout(() => controller.abort(), options.timeoutMs);
      const started = performance.now();
      try {
        const answer = await get(url, agent, controller.signal);
        const ms = performance.now() - started;
        count(answer.status);
        if (answer.status === 429 || answer.status === 503) {
          tally.shed.push(ms);
          if (!answer.retryAfter) tally.shedWithoutRetryAfter++;
        } else if (answer.status < 300) tally.answered.push(ms);
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
  tally.loopDelay = loopDelay();
  for (const agent of agents) agent.destroy();
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
    addresses: Number(process.env.FLOOD_ADDRESSES ?? 0),
  });
  process.stdout.write(`${JSON.stringify(tally)}\n`);
}
