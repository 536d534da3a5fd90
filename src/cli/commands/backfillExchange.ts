import { dedicatedConnection } from '../../data/ingest/connection.ts';
import {
  expectedCandles,
  importExchangeSlice,
  planSlices,
  type ExchangeSource,
} from '../../data/ingest/exchange/exchangeBackfill.ts';
import { createCandleSource } from '../../data/ingest/exchange/sources.ts';
import { enqueueSliceJobs } from '../../data/ingest/jobs.ts';
import {
  formatSummary,
  SummaryCollector,
  type BackfillSummary,
} from '../../data/ingest/summary.ts';
import type { Config } from '../../shared/config.ts';
import { printable } from '../../shared/printable.ts';
import { createProgress } from '../progress.ts';
import {
  parseTimeOption,
  reportEnqueued,
  withPool,
  type BackfillOptions,
} from './backfillCommon.ts';

// `platform backfill --source <exchange> --code … --from … --to …`: one range, in day slices.

export async function backfillFromExchange(
  config: Config,
  options: BackfillOptions & { source: ExchangeSource },
  usage: (message: string) => never,
): Promise<BackfillSummary | null> {
  const from = parseTimeOption(options.from ?? '', '--from', usage);
  const to = parseTimeOption(options.to ?? '', '--to', usage);
  if (from >= to) usage('--from must be before --to');
  const code = (options.code ?? '').toUpperCase();
  if (!/^[A-Z0-9]{1,15}$/.test(code)) usage('--code must be 1 to 15 letters or digits');
  const client = createCandleSource(options.source ?? 'binance', config, {
    onWait: (reason, ms) => {
      if (ms >= 1000)
        process.stderr.write(
          `backfill: waiting ${Math.ceil(ms / 1000)} s (${printable(reason)})\n`,
        );
    },
  });
  const slices = planSlices({
    code,
    symbol: client.symbol(code, options.quote),
    interval: options.interval,
    from: new Date(from),
    to: new Date(to),
    source: options.source ?? 'binance',
  });

  if (options.enqueue) {
    const count = await withPool(config, (pool) =>
      enqueueSliceJobs(pool, slices, { force: !!options.force }),
    );
    reportEnqueued(count, 'slice', options.json);
    return null;
  }

  const total = slices.reduce((sum, s) => sum + expectedCandles(s), 0);
  const progress = createProgress(total, { quiet: !!options.json });
  const collector = new SummaryCollector();
  const connect = dedicatedConnection(config.DATABASE_URL);
  try {
    for (const slice of slices) {
      let rows = 0;
      const result = await importExchangeSlice(connect, client, slice, {
        force: !!options.force,
        onProgress: (work) => progress.advance(work, 0),
      });
      rows = result.read;
      progress.advance(0, rows);
      collector.add(result);
    }
  } catch (error) {
    progress.stop();
    // The slices done so far are stored and recorded; a rerun resumes after them.
    process.stdout.write(formatSummary(collector.result(), 'slice'));
    throw error;
  }
  progress.stop();
  return collector.result();
}
