import { describe, expect, it } from '@jest/globals';
import { zoneOffsetSeconds, zoneOffsetsOver } from '../../src/shared/time/timeZones.ts';

const DAY = 86_400_000;
const sorted = (values: number[]) => [...values].sort((a, b) => a - b);

/** Every offset at the window's ends and at each of its instants a day apart (the definition). */
function offsetsSampledDaily(zone: string, from: number, to: number): number[] {
  const offsets = new Set([zoneOffsetSeconds(zone, to)]);
  for (let t = from; t < to; t += DAY) offsets.add(zoneOffsetSeconds(zone, t));
  return sorted([...offsets]);
}

describe('zoneOffsetsOver', () => {
  it('finds both offsets of a zone with summer time over a year, and one without', () => {
    const to = Date.UTC(2026, 10, 27, 1, 2, 3, 456);
    const from = to - 365 * DAY;
    expect(sorted(zoneOffsetsOver('Europe/Berlin', from, to))).toEqual([3600, 7200]);
    expect(zoneOffsetsOver('Asia/Kathmandu', from, to)).toEqual([20_700]);
    expect(sorted(zoneOffsetsOver('America/St_Johns', from, to))).toEqual([-12_600, -9000]);
  });

  it('gives what sampling the window itself a day apart gives, whatever its ends and repeats', () => {
    const zones = ['Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Africa/Casablanca'];
    for (const zone of zones) {
      for (let i = 0; i < 40; i++) {
        const to = Date.UTC(2019, 0, 1) + i * 37 * DAY + i * 3_599_999;
        for (const span of [6 * 3_600_000, 2 * DAY, 30 * DAY, 366 * DAY]) {
          // Twice: the second answer comes from the offsets kept by the first.
          for (let repeat = 0; repeat < 2; repeat++) {
            expect(sorted(zoneOffsetsOver(zone, to - span, to))).toEqual(
              offsetsSampledDaily(zone, to - span, to),
            );
          }
        }
      }
    }
  });

  it('catches a change of offset inside a window shorter than a day', () => {
    // Berlin went to summer time at 2026-03-29 01:00 UTC.
    const change = Date.UTC(2026, 2, 29, 1);
    expect(
      sorted(zoneOffsetsOver('Europe/Berlin', change - 3_600_000, change + 3_600_000)),
    ).toEqual([3600, 7200]);
  });
});
