import { z } from 'zod';
import { assertWithinPointCap, maxBuckets, type TimeWindow } from '../../shared/time/bucketGrid.ts';
import { timestampSchema } from './timestamp.ts';

// Query parameters shared by the read-back routes: a time range [from, to) in either timestamp
// form, a bucket width with the same rules as the history route, and paging.

const MAX_INTERVAL_SECONDS = 87_600 * 3600;
const DAY_MS = 86_400_000;

// Integers only: "1.5", "1e3" and "" are refused rather than rounded.
const integerParam = z.string().regex(/^\d+$/, 'must be a non-negative integer').transform(Number);

export const fromParam = timestampSchema
  .optional()
  .meta({ description: 'Start of the range, inclusive (default: `to` minus 24 hours).' });
export const toParam = timestampSchema
  .optional()
  .meta({ description: 'End of the range, exclusive (default: now).' });

export function intervalParam(description: string) {
  return integerParam.pipe(z.number().int().min(1).max(MAX_INTERVAL_SECONDS)).meta({ description });
}

export function limitParam(defaultLimit: number, maxLimit: number) {
  return integerParam
    .pipe(z.number().int().min(1).max(maxLimit))
    .default(defaultLimit)
    .meta({ description: `Most rows to return (1..${maxLimit}, default ${defaultLimit}).` });
}

export const offsetParam = integerParam
  .pipe(z.number().int().min(0))
  .default(0)
  .meta({ description: 'Rows to skip.' });

/** Refuses `from` at or after `to`, naming `to`. */
export function rangeIsOrdered(query: { from?: Date; to?: Date }, ctx: z.RefinementCtx) {
  if (query.from && query.to && query.from >= query.to) {
    ctx.addIssue({ code: 'custom', path: ['to'], message: 'must be later than from' });
  }
}

/** The range with its defaults: up to now, 24 hours long. */
export function resolveRange(query: { from?: Date; to?: Date }): { from: Date; to: Date } {
  const to =
    query.to ??
    (query.from ? new Date(Math.max(Date.now(), query.from.getTime() + 1)) : new Date());
  const from = query.from ?? new Date(to.getTime() - DAY_MS);
  return { from, to };
}

/** Same cap as the history route: answers are bounded by HISTORY_MAX_POINTS buckets. */
export function assertPointCap(range: TimeWindow, intervalSeconds: number, maxPoints: number) {
  assertWithinPointCap(maxBuckets({ intervalSeconds }, range), maxPoints, {
    parameter: 'intervalSeconds',
    advice: 'use a larger intervalSeconds or a shorter range',
  });
}
