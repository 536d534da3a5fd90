import type { GridSpec, TimeWindow } from '../../shared/time/bucketGrid.ts';

// What a history answer is asked for: one currency, a window, a grid (src/shared/time/bucketGrid.ts)
// and how empty buckets are filled. The leaf every other file of the read path shares.

export type FillMode = 'none' | 'null' | 'previous' | 'linear';

/** Whether the fill carries values from one bucket to the next (from seeds outside a window). */
export function carriesValues(request: Pick<CandleRequest, 'fill'>): boolean {
  return request.fill === 'previous' || request.fill === 'linear';
}

export interface CandleRequest extends GridSpec, TimeWindow {
  code: string;
  fill: FillMode;
}
