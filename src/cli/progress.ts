import { Presets, SingleBar } from 'cli-progress';

export interface Progress {
  /** Adds `done` units of work. */
  increment(done?: number): void;
  /** Total units, when it becomes known (or changes). */
  setTotal(total: number): void;
  /** Final state: leaves the full bar on screen and releases the terminal. */
  stop(): void;
}

export interface ProgressOptions {
  label: string;
  /** Units counted, e.g. 'rows' or 'files'. */
  unit: string;
  total?: number;
  /** false for --json or other machine output: scripts read stdout, bars would only be noise. */
  enabled?: boolean;
  stream?: NodeJS.WriteStream;
}

const NO_PROGRESS: Progress = { increment() {}, setTotal() {}, stop() {} };

/**
 * The progress bar of long commands (backfill, export, …): on stderr, so stdout stays for results,
 * and only on a terminal; in a pipe, a log or with --json it stays silent.
 */
export function createProgress(options: ProgressOptions): Progress {
  const stream = options.stream ?? process.stderr;
  if (options.enabled === false || !stream.isTTY) return NO_PROGRESS;
  const bar = new SingleBar(
    {
      stream,
      format: `${options.label} [{bar}] {percentage}% | {value}/{total} ${options.unit} | {rate}/s | eta {eta_formatted}`,
      hideCursor: true,
      etaBuffer: 50,
      fps: 5,
    },
    Presets.shades_classic,
  );
  const started = Date.now();
  let value = 0;
  bar.start(options.total ?? 0, 0, { rate: 0 });
  return {
    increment(done = 1) {
      value += done;
      bar.increment(done, {
        rate: Math.round(value / Math.max(0.001, (Date.now() - started) / 1000)),
      });
    },
    setTotal(total) {
      bar.setTotal(total);
    },
    stop() {
      bar.stop();
    },
  };
}
