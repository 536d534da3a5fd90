import {
  backfillFromArchives,
  type ArchiveOutcome,
} from '../../data/ingest/archive/archiveBackfill.ts';
import { BinanceArchiveClient } from '../../data/ingest/archive/archiveClient.ts';
import { ARCHIVE_SOURCE } from '../../data/ingest/archive/archivePlan.ts';
import { dedicatedConnection } from '../../data/ingest/connection.ts';
import { BinanceKlineClient } from '../../data/ingest/exchange/binanceKlines.ts';
import { intervalMs } from '../../data/ingest/exchange/intervals.ts';
import { ExchangeError } from '../../data/ingest/exchange/patientHttp.ts';
import type { Config } from '../../shared/config.ts';
import { printable } from '../../shared/printable.ts';
import { createProgress } from '../progress.ts';
import {
  planRun,
  reportRun,
  type CurrencyReport,
  type IncrementalOptions,
} from './backfillIncremental.ts';

// `platform backfill --source binance-archive`: the same currencies and range modes as the
// incremental exchange backfill (planRun), fetched from Binance's public kline archives with REST
// for what no archive holds yet. One progress bar for the run, one report per currency, the JSON
// of the other sources with an `archives` count per currency.

interface ArchiveCurrencyReport extends CurrencyReport {
  archives?: ArchiveOutcome['archives'];
  restSlices?: number;
}

export async function runArchiveBackfill(
  config: Config,
  options: Omit<IncrementalOptions, 'source'>,
): Promise<number> {
  const http = {
    timeoutMs: config.BACKFILL_HTTP_TIMEOUT_MS,
    onWait: (reason: string, ms: number) => {
      if (ms >= 1000)
        process.stderr.write(
          `backfill: waiting ${Math.ceil(ms / 1000)} s (${printable(reason)})\n`,
        );
    },
  };
  const rest = new BinanceKlineClient({ baseUrl: config.BINANCE_API_URL, ...http });
  const archives = new BinanceArchiveClient({ baseUrl: config.BINANCE_ARCHIVE_URL, ...http });
  const connect = dedicatedConnection(config.DATABASE_URL);
  const plans = await planRun(connect, rest, { ...options, source: 'binance' });
  const step = intervalMs(options.interval);
  const total = plans.reduce(
    (n, p) => n + ('fromMs' in p ? Math.round((p.toMs - p.fromMs) / step) : 0),
    0,
  );
  const progress = createProgress(total, { quiet: options.json });
  const reports: ArchiveCurrencyReport[] = [];
  let stopped: string | undefined;
  const nowMs = Date.now();
  try {
    for (const plan of plans) {
      const symbol = rest.symbol(plan.code, options.quote);
      const report: ArchiveCurrencyReport = {
        code: plan.code,
        symbol,
        status: 'loaded',
        slices: 0,
        slicesSkipped: 0,
        read: 0,
        inserted: 0,
        duplicates: 0,
        rejected: 0,
      };
      reports.push(report);
      if ('skip' in plan) {
        report.status = plan.skip === 'up to date' ? 'up to date' : 'skipped';
        report.note = plan.skip;
        continue;
      }
      report.from = new Date(plan.fromMs).toISOString();
      report.to = new Date(plan.toMs).toISOString();
      try {
        const outcome = await backfillFromArchives(
          { connect, archives, rest },
          {
            ...plan,
            symbol,
            interval: options.interval,
            nowMs,
            force: options.force,
            newestFirst: options.mode.kind === 'prepend',
            sequential: options.mode.kind === 'since-last',
          },
          (work, rows) => progress.advance(work, rows),
        );
        describeOutcome(report, outcome);
        for (const problem of outcome.problems)
          process.stderr.write(`backfill: ${plan.code}: ${printable(problem)}\n`);
      } catch (error) {
        report.status = 'failed';
        const message = error instanceof Error ? error.message : String(error);
        // A pair the exchange refuses: the other currencies go on. An exchange or archive server
        // that stays down, or a database failure, ends the run; what is loaded stays recorded.
        const pairRefused =
          error instanceof ExchangeError &&
          !error.retryable &&
          (error.status === 400 || error.status === 404);
        report.note = pairRefused ? message : `stopped: ${message}`;
        if (!pairRefused) {
          stopped = report.note;
          break;
        }
      }
    }
  } finally {
    progress.stop();
  }
  return reportRun(ARCHIVE_SOURCE, reports, plans.length, stopped, options.json);
}

function describeOutcome(report: ArchiveCurrencyReport, outcome: ArchiveOutcome) {
  const { archives } = outcome;
  report.read = outcome.read;
  report.inserted = outcome.inserted;
  report.duplicates = outcome.duplicates;
  report.rejected = outcome.rejected;
  report.archives = archives;
  report.restSlices = outcome.restSlices;
  report.slices = archives.monthly + archives.daily + archives.skipped + outcome.restSlices;
  report.slicesSkipped = archives.skipped + outcome.restSlicesSkipped;
  const parts = [
    `${archives.monthly} monthly + ${archives.daily} daily archives`,
    `${outcome.restSlices} REST day slices`,
  ];
  if (archives.missing) parts.push(`${archives.missing} not published`);
  if (archives.refused) parts.push(`${archives.refused} refused`);
  report.note = parts.join(', ');
  if (outcome.problems.length > 0) {
    report.status = 'failed';
    report.note += `; ${outcome.problems.join('; ')}`;
  }
}
