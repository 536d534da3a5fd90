// The probe of bench:load --flood: an open loop beside the attacker's clients, in a process of its
// own, sending PROBE_BURST requests every PROBE_EVERY_MS from the attacker's address(es) whatever
// the answers do, each timed from its sending to its last byte. The attacker's closed loop of 200
// clients times its own starvation as much as the platform (each of its requests waits for that
// process's loop); the probe's loop is idle between its sends, and its event-loop delay is
// printed beside its figures. What neither can separate is the wait in the API's accept queue:
// the platform's own timing of a shed answer (shedTiming.ts) starts at its arrival in the server.
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { loopDelayMonitor, type LoopDelay } from './floodClients.ts';
import { agentsFor, floodUrl, get } from './floodHttp.ts';

const PROBE_BURST = 2;
const PROBE_EVERY_MS = 10;

export interface ProbeOptions {
  apiUrl: string;
  seconds: number;
  timeoutMs: number;
  addresses: number;
}

export interface ProbeTally {
  statuses: Record<string, number>;
  /** Every shed answer (429/503): [ms from sending to the last byte, seconds into the round]. */
  shed: Array<[number, number]>;
  shedWithoutRetryAfter: number;
  /** Requests without an answer in time, or failed: [seconds into the round, the error's name]. */
  failed: Array<[number, string]>;
  loopDelay: LoopDelay;
}

export async function runProbe(options: ProbeOptions): Promise<ProbeTally> {
  const loopDelay = loopDelayMonitor();
  const agents = agentsFor(options.addresses);
  const tally: ProbeTally = {
    statuses: {},
    shed: [],
    shedWithoutRetryAfter: 0,
    failed: [],
    loopDelay: { p50: NaN, p99: NaN, max: NaN },
  };
  const count = (status: number | string) => {
    tally.statuses[status] = (tally.statuses[status] ?? 0) + 1;
  };
  const pending = new Set<Promise<void>>();
  const started = performance.now();
  let sentCount = 0;
  const probe = async () => {
    const at = (performance.now() - started) / 1000;
    const agent = agents[sentCount % agents.length]!;
    // An interval no flood client asks for at the same moment (the answer is never cached).
    const url = floodUrl(options.apiUrl, 5000 + (sentCount++ % 5000));
    const sent = performance.now();
    try {
      const answer = await get(url, agent, AbortSignal.timeout(options.timeoutMs));
      count(answer.status);
      if (answer.status === 429 || answer.status === 503) {
        tally.shed.push([performance.now() - sent, at]);
        if (!answer.retryAfter) tally.shedWithoutRetryAfter++;
      }
    } catch (error) {
      count('gave up');
      tally.failed.push([at, (error as Error).name]);
    }
  };
  const ends = started + options.seconds * 1000;
  // Open loop: the n-th burst is due at n × PROBE_EVERY_MS, late or not, whatever came back.
  for (let burst = 0; performance.now() < ends; burst++) {
    for (let i = 0; i < PROBE_BURST; i++) {
      const request = probe().finally(() => pending.delete(request));
      pending.add(request);
    }
    const due = started + (burst + 1) * PROBE_EVERY_MS;
    await sleep(Math.max(0, due - performance.now()));
  }
  await Promise.all(pending);
  tally.loopDelay = loopDelay();
  for (const agent of agents) agent.destroy();
  return tally;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write('probing\n');
  const tally = await runProbe({
    apiUrl: process.env.FLOOD_API_URL ?? '',
    seconds: Number(process.env.FLOOD_SECONDS ?? 20),
    timeoutMs: Number(process.env.FLOOD_CLIENT_TIMEOUT_MS ?? 3000),
    addresses: Number(process.env.FLOOD_ADDRESSES ?? 0),
  });
  process.stdout.write(`${JSON.stringify(tally)}\n`);
}
