// The rollup hierarchy, finest first. Every level is aligned to the Unix epoch and nests in the
// next one (60 | 3600 | 86400), so a bucket of any level is an exact union of buckets below it.

export const LEVELS = [
  { name: '1m', relation: 'candles_1m', seconds: 60 },
  { name: '1h', relation: 'candles_1h', seconds: 3600 },
  { name: '1d', relation: 'candles_1d', seconds: 86_400 },
] as const;

export type Level = (typeof LEVELS)[number];
export type LevelName = Level['name'];

/** Apache edition: our own rollup tables and worker; Timescale edition: continuous aggregates. */
export type RollupMode = 'tables' | 'continuous';

/** Floor and ceiling of `ms` to a multiple of `width` (both in ms; works for negatives). */
export function floorTo(ms: number, width: number): number {
  return Math.floor(ms / width) * width;
}

export function ceilTo(ms: number, width: number): number {
  return Math.ceil(ms / width) * width;
}

/** Non-negative remainder, so alignment tests hold before the epoch too. */
export function mod(a: number, b: number): number {
  return ((a % b) + b) % b;
}
