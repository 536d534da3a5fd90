// The platform's own timing of its shed answers during a round of bench:load --flood:
// http_shed_answer_duration_seconds (src/shared/http/shedAnswers.ts), from a request's arrival at
// the HTTP server's request listener to its 429/503 handed to the socket, scraped from the
// platform's /metrics before and after the round; the difference is the round's.
import { parseMetrics } from '../../test/support/prometheus.ts';

const BUCKET = 'http_shed_answer_duration_seconds_bucket';

/** Cumulative bucket counts, every route group and reason together, by upper bound (s). */
export type ShedBuckets = Map<number, number>;

/**
 * The shed-answer histogram's buckets now (empty when the platform has no such metric: an older
 * checkout), and the platform's event-loop delay since the previous scrape (ms; prom-client's
 * default metrics reset it at every scrape).
 */
export async function scrapePlatform(metricsUrl: string) {
  const response = await fetch(`${metricsUrl}/metrics`);
  if (!response.ok) throw new Error(`${metricsUrl}/metrics answered ${response.status}`);
  const shed: ShedBuckets = new Map();
  const loopDelay = { p99: NaN, max: NaN };
  for (const sample of parseMetrics(await response.text())) {
    if (sample.name === 'nodejs_eventloop_lag_p99_seconds') loopDelay.p99 = ms(sample.value);
    if (sample.name === 'nodejs_eventloop_lag_max_seconds') loopDelay.max = ms(sample.value);
    if (sample.name !== BUCKET) continue;
    const le = sample.labels.le === '+Inf' ? Infinity : Number(sample.labels.le);
    shed.set(le, (shed.get(le) ?? 0) + sample.value);
  }
  return { shed, loopDelay };
}

const ms = (seconds: number) => Math.round(seconds * 1e4) / 10;

export interface ShedTiming {
  /** Shed answers timed in the round. */
  n: number;
  /** Upper bounds (ms) of the buckets holding the median and the 99th percentile. */
  p50AtMost: number;
  p99AtMost: number;
  /** Answers timed at 100 ms or less. */
  within100ms: number;
}

/** The round's shed answers (after minus before); undefined when the platform has no histogram. */
export function shedTiming(before: ShedBuckets, after: ShedBuckets): ShedTiming | undefined {
  if (after.size === 0) return undefined;
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const cumulative = bounds.map((le) => [le, after.get(le)! - (before.get(le) ?? 0)] as const);
  const n = cumulative.at(-1)![1];
  const atMost = (p: number) => {
    const found = cumulative.find(([, count]) => count >= (p / 100) * n);
    return found ? found[0] * 1000 : NaN;
  };
  return {
    n,
    p50AtMost: atMost(50),
    p99AtMost: atMost(99),
    within100ms: cumulative.find(([le]) => le === 0.1)?.[1] ?? NaN,
  };
}

export function describeShedTiming(timing: ShedTiming | undefined): string {
  if (!timing) return 'not recorded by this checkout';
  if (timing.n === 0) return 'none';
  const share = ((timing.within100ms / timing.n) * 100).toFixed(
    timing.within100ms < timing.n ? 2 : 0,
  );
  return (
    `${timing.n}; p50 ≤ ${timing.p50AtMost} ms, p99 ≤ ${timing.p99AtMost} ms; ` +
    `${timing.within100ms} within 100 ms (${share} %)`
  );
}
