import { createRequire } from 'node:module';
import type * as CliProgress from 'cli-progress';
import { formatCount } from '../shared/counts.ts';

// The bar's library is loaded only to draw a bar on a terminal: redirected and --json runs (every
// script, every benchmark) do without it.
const loadCliProgress = () => createRequire(import.meta.url)('cli-progress') as typeof CliProgress;

/** Progress of a long command: rows, rows/s and ETA, driven by a measure of work (bytes, candles). */
export interface Progress {
  /** Work done (may be negative when an attempt is redone) and rows read. */
  advance(work: number, rows: number): void;
  stop(): void;
}

const n = (value: number) => formatCount(Math.max(0, value));

function eta(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  if (seconds < 90) return `${Math.ceil(seconds)} s`;
  if (seconds < 5400) return `${Math.ceil(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

/**
 * A bar on a terminal; elsewhere (CI logs, pipes) one line on stderr every few seconds. The ETA
 * comes from the share of the work done, the rate from rows read so far.
 */
export function createProgress(total: number, options: { quiet?: boolean } = {}): Progress {
  const started = performance.now();
  let work = 0;
  let rows = 0;
  const rate = () => rows / Math.max(0.001, (performance.now() - started) / 1000);
  const remaining = () => {
    const elapsed = (performance.now() - started) / 1000;
    return work > 0 ? (elapsed * (total - work)) / work : Number.NaN;
  };

  if (options.quiet) return { advance: () => {}, stop: () => {} };

  if (process.stderr.isTTY) {
    const cliProgress = loadCliProgress();
    const bar = new cliProgress.SingleBar(
      {
        format: ' {bar} {percentage}% | {rows} rows | {rate} rows/s | ETA {left}',
        hideCursor: true,
        stream: process.stderr,
        etaBuffer: 50,
        fps: 5,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(Math.max(1, total), 0, { rows: '0', rate: '0', left: '?' });
    return {
      advance(w, r) {
        work += w;
        rows += r;
        bar.update(Math.max(0, work), { rows: n(rows), rate: n(rate()), left: eta(remaining()) });
      },
      stop() {
        bar.stop();
      },
    };
  }

  const timer = setInterval(() => {
    const percent = total > 0 ? Math.min(100, (100 * work) / total).toFixed(0) : '?';
    process.stderr.write(
      `backfill: ${percent}% ${n(rows)} rows, ${n(rate())} rows/s, ETA ${eta(remaining())}\n`,
    );
  }, 5000);
  timer.unref();
  return {
    advance(w, r) {
      work += w;
      rows += r;
    },
    stop() {
      clearInterval(timer);
    },
  };
}
