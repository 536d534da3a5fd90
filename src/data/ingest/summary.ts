import { formatCount } from '../../shared/counts.ts';
import { printable } from '../../shared/printable.ts';
import type { Rejection, UnitResult } from './types.ts';

const KEPT_REJECTIONS = 1000;

export interface BackfillSummary {
  units: number;
  loaded: number;
  skipped: number;
  /** Units refused whole (--strict with malformed rows). */
  rejectedUnits: number;
  failed: number;
  read: number;
  inserted: number;
  duplicates: number;
  rejected: number;
  /** The first rejected rows over all units; `rejected` counts them all. */
  rejections: Rejection[];
  failures: Array<{ file: string; error: string }>;
  seconds: number;
  rowsPerSecond: number;
}

/** Adds up unit results into what `platform backfill` reports. */
export class SummaryCollector {
  private readonly started = performance.now();
  private readonly summary: Omit<BackfillSummary, 'seconds' | 'rowsPerSecond'> = {
    units: 0,
    loaded: 0,
    skipped: 0,
    rejectedUnits: 0,
    failed: 0,
    read: 0,
    inserted: 0,
    duplicates: 0,
    rejected: 0,
    rejections: [],
    failures: [],
  };

  add(result: UnitResult): void {
    const s = this.summary;
    s.units++;
    if (result.status === 'loaded') s.loaded++;
    else if (result.status === 'skipped') s.skipped++;
    else if (result.status === 'rejected') s.rejectedUnits++;
    else s.failed++;
    s.read += result.read;
    s.inserted += result.inserted;
    s.duplicates += result.duplicates;
    s.rejected += result.rejected;
    for (const r of result.rejections) {
      if (s.rejections.length < KEPT_REJECTIONS) s.rejections.push(r);
    }
    if (result.status === 'failed' || result.status === 'rejected') {
      s.failures.push({ file: result.label, error: result.error ?? result.status });
    }
  }

  result(): BackfillSummary {
    const seconds = (performance.now() - this.started) / 1000;
    return {
      ...this.summary,
      seconds: Math.round(seconds * 1000) / 1000,
      rowsPerSecond: seconds > 0 ? Math.round(this.summary.read / seconds) : 0,
    };
  }
}

const n = formatCount;

/**
 * The human summary: counts, then the first rejected rows as file:line reason, then failures.
 * File names, reasons and errors quote the input, so they are escaped for the terminal.
 */
export function formatSummary(s: BackfillSummary, unitName = 'file', maxListed = 20): string {
  const lines: string[] = [];
  const parts = [`${s.loaded} loaded`];
  if (s.skipped) parts.push(`${s.skipped} already loaded, skipped`);
  if (s.rejectedUnits) parts.push(`${s.rejectedUnits} rejected`);
  if (s.failed) parts.push(`${s.failed} failed`);
  lines.push(
    `backfill: ${s.units} ${unitName}${s.units === 1 ? '' : 's'} (${parts.join(', ')}) in ${s.seconds.toFixed(1)} s, ${n(s.rowsPerSecond)} rows/s`,
  );
  const width = n(Math.max(s.read, s.inserted, s.duplicates, s.rejected)).length;
  lines.push(`  read        ${n(s.read).padStart(width)}`);
  lines.push(`  inserted    ${n(s.inserted).padStart(width)}`);
  lines.push(
    `  duplicates  ${n(s.duplicates).padStart(width)}  (already stored: existing rows win)`,
  );
  lines.push(`  rejected    ${n(s.rejected).padStart(width)}`);
  if (s.rejected > 0) {
    const shown = s.rejections.slice(0, maxListed);
    lines.push(
      `rejected rows${s.rejected > shown.length ? ` (first ${shown.length} of ${n(s.rejected)})` : ''}:`,
    );
    for (const r of shown) lines.push(`  ${printable(r.file)}:${r.line}  ${printable(r.reason)}`);
  }
  if (s.failures.length > 0) {
    lines.push(`not loaded:`);
    for (const f of s.failures) lines.push(`  ${printable(f.file)}  ${printable(f.error)}`);
  }
  return `${lines.join('\n')}\n`;
}
