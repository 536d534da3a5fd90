import type { TouchedRange } from '../prices/invalidations.ts';

/** Rows further apart than this start a new touched range, so a gap is not recomputed for nothing. */
const GAP_US = 86_400_000_000;
const COMPACT_AT = 4096;

/**
 * Collects the time ranges a load writes, per currency: consecutive rows (within a day of each
 * other) extend one range. Sorted input costs one comparison per row; unsorted input is merged
 * at the end. The rollups recompute exactly these ranges.
 */
export class RangeTracker {
  private readonly runs = new Map<string, Array<[number, number]>>();

  add(code: string, fromUs: number, toUs = fromUs): void {
    let list = this.runs.get(code);
    if (!list) {
      list = [];
      this.runs.set(code, list);
    }
    const last = list[list.length - 1];
    if (last && fromUs >= last[0] - GAP_US && toUs <= last[1] + GAP_US) {
      if (fromUs < last[0]) last[0] = fromUs;
      if (toUs > last[1]) last[1] = toUs;
      return;
    }
    list.push([fromUs, toUs]);
    if (list.length >= COMPACT_AT) this.runs.set(code, merge(list));
  }

  get isEmpty(): boolean {
    return this.runs.size === 0;
  }

  ranges(): TouchedRange[] {
    const out: TouchedRange[] = [];
    for (const [code, list] of this.runs) {
      for (const [from, to] of merge(list)) {
        out.push({
          code,
          from: new Date(Math.floor(from / 1000)),
          to: new Date(Math.ceil(to / 1000)),
        });
      }
    }
    return out;
  }

  /** Per-code [earliest, latest] in µs; what a load is about to write, for the overlap check. */
  spans(): Array<{ code: string; fromUs: number; toUs: number }> {
    const out: Array<{ code: string; fromUs: number; toUs: number }> = [];
    for (const [code, list] of this.runs) {
      let from = Infinity;
      let to = -Infinity;
      for (const [a, b] of list) {
        if (a < from) from = a;
        if (b > to) to = b;
      }
      out.push({ code, fromUs: from, toUs: to });
    }
    return out;
  }
}

function merge(list: Array<[number, number]>): Array<[number, number]> {
  const sorted = [...list].sort((a, b) => a[0] - b[0]);
  const out: Array<[number, number]> = [];
  for (const run of sorted) {
    const last = out[out.length - 1];
    if (last && run[0] <= last[1] + GAP_US) {
      if (run[1] > last[1]) last[1] = run[1];
    } else {
      out.push([run[0], run[1]]);
    }
  }
  return out;
}
