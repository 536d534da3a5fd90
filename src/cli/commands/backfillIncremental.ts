import { dedicatedConnection, type Connect } from '../../data/ingest/connection.ts';
import type { CandleSource } from '../../data/ingest/exchange/candleSource.ts';
import {
  expectedCandles,
  importExchangeSlice,
  type ExchangeSource,
} from '../../data/ingest/exchange/exchangeBackfill.ts';
import {
  listedCurrencyCodes,
  planCurrency,
  storedRanges,
  type CurrencyPlan,
  type RangeMode,
} from '../../data/ingest/exchange/incremental.ts';
import { ExchangeError } from '../../data/ingest/exchange/patientHttp.ts';
import { createCandleSource } from '../../data/ingest/exchange/sources.ts';
import type { Config } from '../../shared/config.ts';
import { formatCount } from '../../shared/counts.ts';
import { printable } from '../../shared/printable.ts';
import { printJson } from '../context.ts';
import { EXIT } from '../exitCodes.ts';
import { createProgress, type Progress } from '../progress.ts';

// `platform backfill --source X --all|--code C --since-last|--days N|--prepend|--from/--to`: plans
// each currency's range from what is stored, loads slice by slice with one progress bar for the
// whole run, and reports per currency.

export interface IncrementalOptions {
  source: ExchangeSource;
  /** One currency, or every currency of the list the exchange lists. */
  code?: string;
  mode: RangeMode;
  interval: string;
  quote?: string;
  force: boolean;
  json: boolean;
}

export interface CurrencyReport {
  code: string;
  symbol: string;
  status: 'loaded' | 'up to date' | 'skipped' | 'failed';
  from?: string;
  to?: string;
  slices: number;
  /** Slices recorded as loaded by an earlier run, not asked for again. */
  slicesSkipped: number;
  read: number;
  inserted: number;
  /** Rows the exchange sent that were already stored (stored rows win). */
  duplicates: number;
  rejected: number;
  note?: string;
}

const iso = (ms: number) => new Date(ms).toISOString();

export async function runIncrementalBackfill(
  config: Config,
  options: IncrementalOptions,
): Promise<number> {
  const client = createCandleSource(options.source, config, {
    onWait: (reason, ms) => {
      if (ms >= 1000)
        process.stderr.write(
          `backfill: waiting ${Math.ceil(ms / 1000)} s (${printable(reason)})\n`,
        );
    },
  });
  const connect = dedicatedConnection(config.DATABASE_URL);
  const plans = await planRun(connect, client, options);
  const total = plans.reduce(
    (sum, p) => sum + ('slices' in p ? p.slices.reduce((s, x) => s + expectedCandles(x), 0) : 0),
    0,
  );
  const progress = createProgress(total, { quiet: options.json });
  const reports: CurrencyReport[] = [];
  let stopped: string | undefined;
  try {
    for (const plan of plans) {
      const report = await loadCurrency(connect, client, plan, options, progress);
      reports.push(report);
      if (report.status === 'failed' && report.note?.startsWith('stopped:')) {
        stopped = report.note;
        break;
      }
    }
  } finally {
    progress.stop();
  }
  return reportRun(options.source, reports, plans.length, stopped, options.json);
}

export async function planRun(
  connect: Connect,
  client: CandleSource,
  options: IncrementalOptions,
): Promise<CurrencyPlan[]> {
  const connection = await connect();
  try {
    const known = await listedCurrencyCodes(connection.client);
    let codes: string[];
    if (options.code) {
      codes = known.includes(options.code) ? [options.code] : [];
      if (codes.length === 0)
        return [{ code: options.code, skip: 'not in the currency list (platform doctor)' }];
    } else {
      const listed = await client.listed(known, options.quote);
      codes = known.filter((code) => listed.has(code));
    }
    const stored = await storedRanges(connection.client, codes);
    const nowMs = Date.now();
    return codes.map((code) =>
      planCurrency({
        code,
        symbol: client.symbol(code, options.quote),
        source: options.source,
        interval: options.interval,
        mode: options.mode,
        stored: stored.get(code),
        nowMs,
        ...(client.horizonMs ? { horizonMs: client.horizonMs(options.interval, nowMs) } : {}),
      }),
    );
  } finally {
    await connection.release();
  }
}

async function loadCurrency(
  connect: Connect,
  client: CandleSource,
  plan: CurrencyPlan,
  options: IncrementalOptions,
  progress: Progress,
): Promise<CurrencyReport> {
  const report: CurrencyReport = {
    code: plan.code,
    symbol: client.symbol(plan.code, options.quote),
    status: 'loaded',
    slices: 0,
    slicesSkipped: 0,
    read: 0,
    inserted: 0,
    duplicates: 0,
    rejected: 0,
  };
  if ('skip' in plan) {
    report.status = plan.skip === 'up to date' ? 'up to date' : 'skipped';
    report.note = plan.skip;
    return report;
  }
  report.from = iso(plan.fromMs);
  report.to = iso(plan.toMs);
  for (const slice of plan.slices) {
    try {
      const result = await importExchangeSlice(connect, client, slice, {
        force: options.force,
        onProgress: (work) => progress.advance(work, 0),
      });
      progress.advance(0, result.read);
      report.slices++;
      if (result.status === 'skipped') report.slicesSkipped++;
      report.read += result.read;
      report.inserted += result.inserted;
      report.duplicates += result.duplicates;
      report.rejected += result.rejected;
      if (result.status === 'failed' || result.status === 'rejected') {
        report.status = 'failed';
        report.note = result.error ?? result.status;
        return report;
      }
    } catch (error) {
      report.status = 'failed';
      // The pair refused (not listed in that quote, say): the other currencies go on. An exchange
      // that stays down or a database failure ends the run; what is loaded stays recorded.
      const pairRefused =
        error instanceof ExchangeError &&
        !error.retryable &&
        (error.status === 400 || error.status === 404);
      const message = error instanceof Error ? error.message : String(error);
      report.note = pairRefused ? message : `stopped: ${message}`;
      return report;
    }
  }
  return report;
}

function sum(reports: CurrencyReport[], key: 'inserted' | 'duplicates' | 'rejected') {
  return reports.reduce((s, r) => s + r[key], 0);
}

/**
 * The end of an exchange backfill of any source: totals, the JSON document or the text summary,
 * and the exit code (1 when a currency failed or rows were rejected).
 */
export function reportRun(
  source: string,
  reports: CurrencyReport[],
  planned: number,
  stopped: string | undefined,
  json: boolean | undefined,
): number {
  const totals = {
    currencies: reports.length,
    planned,
    inserted: sum(reports, 'inserted'),
    duplicates: sum(reports, 'duplicates'),
    rejected: sum(reports, 'rejected'),
  };
  if (json) printJson({ source, totals, currencies: reports, stopped });
  else process.stdout.write(formatReports(source, reports, totals, planned));
  const failed = reports.some((r) => r.status === 'failed' || r.rejected > 0);
  return failed ? EXIT.failure : EXIT.ok;
}

const n = formatCount;

function formatReports(
  source: string,
  reports: CurrencyReport[],
  totals: { inserted: number; duplicates: number; rejected: number },
  planned: number,
): string {
  const width = Math.max(4, ...reports.map((r) => r.code.length));
  const lines = reports.map((r) => {
    const head = `  ${r.code.padEnd(width)}  ${r.status.padEnd(10)}`;
    const range = r.from ? `  ${r.from.slice(0, 16)}Z .. ${r.to?.slice(0, 16)}Z` : '';
    const rows =
      r.from !== undefined
        ? `  loaded ${n(r.inserted)}, skipped ${n(r.duplicates)} already stored` +
          (r.rejected ? `, rejected ${n(r.rejected)}` : '') +
          (r.slicesSkipped ? ` (${r.slicesSkipped} of ${r.slices} slices done before)` : '')
        : '';
    return `${head}${rows}${range}${r.note ? `  ${printable(r.note)}` : ''}`;
  });
  const notReached = planned - reports.length;
  const tail = notReached > 0 ? `, ${notReached} not reached` : '';
  return (
    `backfill ${source}: ${reports.length} currencies${tail}; ` +
    `loaded ${n(totals.inserted)} rows, skipped ${n(totals.duplicates)} already stored` +
    (totals.rejected ? `, rejected ${n(totals.rejected)}` : '') +
    `\n${lines.join('\n')}\n`
  );
}
