import type { GridSpec, TimeWindow } from '../../shared/time/bucketGrid.ts';

// What a history answer is asked for: one currency, a window, a grid (src/shared/time/bucketGrid.ts)
// and how empty buckets are filled. The leaf every other file of the read path shares.

export type FillMode = 'none' | 'null' | 'previous' | 'linear';

export interface CandleRequest extends GridSpec, TimeWindow {
  code: string;
  fill: FillMode;
}
