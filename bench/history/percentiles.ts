// The summary both history benchmarks print: median and 95th percentile of a set of timings.

export interface Summary {
  p50: number;
  p95: number;
}

/** The nearest-rank percentile of ascending values. */
const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

export function summarize(times: readonly number[]): Summary {
  const sorted = [...times].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95) };
}

/** "p50 / p95" in milliseconds, as the RESULTS tables show them. */
export const formatSummary = (summary: Summary) =>
  `${summary.p50.toFixed(1)} / ${summary.p95.toFixed(1)}`;
