// The rollup hierarchy, finest first (sql/0220_rollup_levels.sql). Every level is aligned to the
// Unix epoch and nests in the next one (300 | 900 | 3600 | 86400), so a bucket of any level is an
// exact union of buckets below it. There is no 1-minute level: on one-minute data it would copy
// the raw rows; finer and odd intervals read the raw rows. The 15-minute level divides every UTC
// offset in use (+05:30, +05:45, −03:30 …), so days and weeks in any zone read it, not raw rows.

export const LEVELS = [
  { name: '5m', relation: 'candles_5m', seconds: 300 },
  { name: '15m', relation: 'candles_15m', seconds: 900 },
  { name: '1h', relation: 'candles_1h', seconds: 3600 },
  { name: '1d', relation: 'candles_1d', seconds: 86_400 },
] as const;

/** The level of this name. */
export function levelNamed(name: LevelName): Level {
  return LEVELS.find((level) => level.name === name)!;
}

/** Every level's relation name, e.g. for catalogue look-ups of the continuous aggregates. */
export const LEVEL_RELATIONS: readonly string[] = LEVELS.map((level) => level.relation);

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
