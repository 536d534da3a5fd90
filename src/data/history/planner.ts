import type { LocalGrid } from '../../shared/time/bucketGrid.ts';
import { ceilToLevel, floorToLevel, LEVELS, mod, type Level, type LevelName } from './levels.ts';

// Which relation answers which part of a history window. Pure functions over plain numbers
// (milliseconds since the epoch), so the rules are unit-tested without a database.

export interface Interval {
  start: number;
  /** Exclusive; may be Infinity. */
  end: number;
}

/** A time range read from one source: a rollup level or the raw observations. */
export interface Segment {
  source: LevelName | 'raw';
  start: number;
  end: number;
}

/** What the database says about one currency's rollups right now. */
export interface RollupFreshness {
  /** Per level: buckets starting before this are materialised (Infinity: the level is complete). */
  watermarks: Partial<Record<LevelName, number>>;
  /** Ranges rewritten after they were rolled up and not yet recomputed (end inclusive). */
  stale: Interval[];
}

/**
 * Levels whose buckets nest in the query's buckets: the level width divides the bucket width, and
 * every bucket boundary, in UTC (local origin − the zone's offset, for every offset the zone uses
 * over the window), falls on a level boundary, so no query boundary falls inside a level bucket.
 * Finest first, each nesting in the next (at most one hourly level fits: their phases differ);
 * empty means only raw data can answer exactly.
 */
export function usableLevels(grid: LocalGrid): Level[] {
  return LEVELS.filter(
    (level) =>
      grid.widthSeconds % level.seconds === 0 &&
      grid.zoneOffsetsSeconds.every(
        (offset) => mod(grid.originSeconds - offset - level.phaseSeconds, level.seconds) === 0,
      ),
  ).sort((a, b) => a.seconds - b.seconds);
}

/**
 * Covers [from, to) with segments: each level serves the aligned part of the range where it is
 * materialised and not stale; whatever it cannot serve (the unaligned edges, the tail after its
 * watermark, stale ranges) goes to the next finer level, and finally to the raw rows.
 */
export function planSegments(
  window: Interval,
  levels: readonly Level[],
  freshness: RollupFreshness,
): Segment[] {
  const usable = levels.map((level) => ({ level, valid: validIntervals(level, freshness) }));
  const cover = (start: number, end: number, index: number): Segment[] => {
    if (start >= end) return [];
    const entry = usable[index];
    if (!entry) return [{ source: 'raw', start, end }];
    const alignedStart = ceilToLevel(start, entry.level);
    const alignedEnd = floorToLevel(end, entry.level);
    if (alignedStart >= alignedEnd) return cover(start, end, index - 1);
    const segments: Segment[] = [];
    let cursor = start;
    for (const valid of entry.valid) {
      const from = Math.max(valid.start, alignedStart);
      const to = Math.min(valid.end, alignedEnd);
      if (from >= to) continue;
      segments.push(...cover(cursor, from, index - 1));
      segments.push({ source: entry.level.name, start: from, end: to });
      cursor = to;
    }
    segments.push(...cover(cursor, end, index - 1));
    return segments;
  };
  return mergeAdjacent(cover(window.start, window.end, usable.length - 1));
}

/** Where a level can be read: before its watermark, minus the buckets touched by stale ranges. */
export function validIntervals(level: Level, freshness: RollupFreshness): Interval[] {
  const watermark = freshness.watermarks[level.name];
  if (watermark === undefined || watermark === -Infinity) return [];
  const stale = mergeIntervals(
    freshness.stale.map((range) => ({
      start: floorToLevel(range.start, level),
      end: floorToLevel(range.end, level) + level.seconds * 1000,
    })),
  );
  const valid: Interval[] = [];
  let cursor = -Infinity;
  for (const range of stale) {
    if (range.start >= watermark) break;
    if (range.start > cursor) valid.push({ start: cursor, end: range.start });
    cursor = Math.max(cursor, range.end);
  }
  if (cursor < watermark) valid.push({ start: cursor, end: watermark });
  return valid;
}

export function mergeIntervals(intervals: Interval[]): Interval[] {
  const sorted = [...intervals].sort((a, b) => a.start - b.start);
  const merged: Interval[] = [];
  for (const interval of sorted) {
    const last = merged.at(-1);
    if (last && interval.start <= last.end) last.end = Math.max(last.end, interval.end);
    else merged.push({ ...interval });
  }
  return merged;
}

/** Joins consecutive segments of the same source into one. */
export function mergeAdjacent(segments: Segment[]): Segment[] {
  const merged: Segment[] = [];
  for (const segment of segments) {
    const last = merged.at(-1);
    if (last && last.source === segment.source && last.end === segment.start)
      last.end = segment.end;
    else merged.push({ ...segment });
  }
  return merged;
}
