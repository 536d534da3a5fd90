// The rollup hierarchy (sql/0220_rollup_levels.sql, sql/0260_offset_hour_levels.sql), each level
// built from `below` (null: the raw rows). Buckets start at `phaseSeconds` past a multiple of the
// width from the Unix epoch: 0 but for the two offset hourly levels, whose hours start at :15 and
// :30 past the UTC hour. Each level nests in the ones built from it (300 | 900 | 3600 | 86400, a
// quarter hour dividing every phase), so a bucket of any level is an exact union of buckets below
// it. There is no 1-minute level: on one-minute data it would copy the raw rows; finer and odd
// intervals read the raw rows. The 15-minute level divides every UTC offset in use (+05:30,
// +05:45, −03:30 …); the offset hourly levels serve the days and hours of those zones with
// hourly rows (a :30 offset's days start at :30 past a UTC hour, a :45 offset's at :15).

export const LEVELS = [
  { name: '5m', relation: 'candles_5m', seconds: 300, phaseSeconds: 0, below: null },
  { name: '15m', relation: 'candles_15m', seconds: 900, phaseSeconds: 0, below: '5m' },
  { name: '1h', relation: 'candles_1h', seconds: 3600, phaseSeconds: 0, below: '15m' },
  { name: '1d', relation: 'candles_1d', seconds: 86_400, phaseSeconds: 0, below: '1h' },
  {
    name: '1h_at15',
    relation: 'candles_1h_at15',
    seconds: 3600,
    phaseSeconds: 900,
    below: '15m',
  },
  {
    name: '1h_at30',
    relation: 'candles_1h_at30',
    seconds: 3600,
    phaseSeconds: 1800,
    below: '15m',
  },
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

/** The start of the level's bucket holding `ms`, and the first bucket start at or after it. */
export function floorToLevel(ms: number, level: Level): number {
  const phase = level.phaseSeconds * 1000;
  return floorTo(ms - phase, level.seconds * 1000) + phase;
}

export function ceilToLevel(ms: number, level: Level): number {
  const phase = level.phaseSeconds * 1000;
  return ceilTo(ms - phase, level.seconds * 1000) + phase;
}

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
