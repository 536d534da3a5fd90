import { Writable } from 'node:stream';
import { describe, expect, test } from '@jest/globals';
import { createProgress } from '../../src/cli/progress.ts';

/** A stream that records what is written, looking like a terminal or not. */
function capture(isTTY: boolean) {
  let written = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      written += chunk.toString();
      done();
    },
  }) as Writable & { isTTY: boolean; columns: number };
  stream.isTTY = isTTY;
  stream.columns = 120;
  return { stream: stream as unknown as NodeJS.WriteStream, text: () => written };
}

describe('createProgress', () => {
  test('draws a bar with counts and rate on a terminal', () => {
    const out = capture(true);
    const progress = createProgress({
      label: 'backfill',
      unit: 'rows',
      total: 10,
      stream: out.stream,
    });
    progress.increment(3);
    progress.setTotal(12);
    progress.increment(9);
    progress.stop();
    expect(out.text()).toMatch(/backfill \[[█░]+\] 100% \| 12\/12 rows \| \d+\/s/);
  });

  test('stays silent in a pipe or a log, and when the command prints JSON', () => {
    const piped = capture(false);
    const bar = createProgress({ label: 'export', unit: 'rows', total: 5, stream: piped.stream });
    bar.increment(5);
    bar.stop();
    expect(piped.text()).toBe('');

    const json = capture(true);
    const quiet = createProgress({
      label: 'export',
      unit: 'rows',
      enabled: false,
      stream: json.stream,
    });
    quiet.increment(5);
    quiet.stop();
    expect(json.text()).toBe('');
  });
});
