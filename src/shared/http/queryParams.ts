import { z } from 'zod';

// Query parameters shared by every "history of the last N hours at a spacing" route, in the data
// module and in the API, so both accept and refuse exactly the same inputs.

export const MAX_HOURS = 87_600;

/** The rule of every such route: a spacing no wider than the window (400 naming intervalSeconds). */
export function intervalWithinWindow(
  q: { hours: number; intervalSeconds: number },
  ctx: z.RefinementCtx,
) {
  if (q.intervalSeconds > q.hours * 3600) {
    ctx.addIssue({
      code: 'custom',
      path: ['intervalSeconds'],
      message: `must not exceed hours×3600 (${q.hours * 3600})`,
    });
  }
}

/** Integers only: "1.5", "1e3" and "" are refused rather than rounded. */
export const integerParam = z
  .string()
  .regex(/^\d+$/, 'must be a positive integer')
  .transform(Number);

export const historyWindowQuery = z
  .object({
    hours: integerParam
      .pipe(z.number().int().min(1).max(MAX_HOURS))
      .default(24)
      .meta({ description: `Length of the window ending now, in hours (1..${MAX_HOURS}).` }),
    intervalSeconds: integerParam
      .pipe(z.number().int().min(1))
      .default(60)
      .meta({ description: 'Spacing of the points in seconds (1..hours×3600).' }),
  })
  .superRefine(intervalWithinWindow);
