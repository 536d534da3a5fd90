import { InvalidArgumentError, Option, type Command } from 'commander';
import { ARCHIVE_SOURCE } from '../../data/ingest/archive/archivePlan.ts';
import { HISTORY_SOURCES as EXCHANGE_SOURCES } from '../../data/ingest/exchange/candleSource.ts';
import { INTERVALS } from '../../data/ingest/exchange/intervals.ts';
import { SIMULATED_SOURCE } from '../../data/ingest/simulated/days.ts';
import { withExitCodes } from '../help.ts';
import type { BackfillOptions } from './backfillCommon.ts';

export function registerBackfillCommand(program: Command) {
  const backfill = program
    .command('backfill')
    .description(
      'Bulk-load price history from files (Binance kline .zip/.csv, generic CSV, NDJSON) or from an exchange API. Idempotent: completed files and slices are skipped, stored rows win over loaded ones.',
    )
    .argument('[paths...]', 'files or directories (walked recursively)')
    .option('--strict', 'reject a whole file (write nothing of it) when any row is malformed')
    .option('--force', 'load files and slices again even if recorded as loaded')
    .option(
      '--enqueue',
      'hand each file or time slice to the worker as a job instead of loading here',
    )
    .option('--code <code>', 'currency: for --source, or for files without a code column')
    .addOption(
      new Option(
        '--source <source>',
        "backfill from an exchange API, from Binance's public kline archives (binance-archive), or the simulated market's own past (MARKET_SOURCE=simulated)",
      ).choices([...EXCHANGE_SOURCES, ARCHIVE_SOURCE, SIMULATED_SOURCE]),
    )
    .addOption(
      new Option(
        '--days <n>',
        'with --source: the last N days (simulated: default 30, at most 366), or N days before the earliest stored candle with --prepend',
      )
        .argParser(parseDays)
        .default(undefined),
    )
    .option('--from <time>', 'with --source: start (ISO 8601, UTC unless a zone is given)')
    .option('--to <time>', 'with --source: end, exclusive (ISO 8601)')
    .addOption(
      new Option('--interval <interval>', 'with --source: candle size')
        .choices(INTERVALS)
        .default('1m'),
    )
    .option(
      '--quote <asset>',
      'with --source: quote asset of the pair (default USDT on Binance, USD on Coinbase and Kraken)',
    )
    .option('--all', 'with --source: every currency of the list that the exchange lists')
    .option(
      '--since-last',
      "with --source: from each currency's last stored candle to now (--days N for those with none)",
    )
    .option(
      '--prepend',
      'with --source and --days: extend history N days backwards from the earliest stored candle',
    )
    .option('--json', 'print the summary as JSON')
    .addHelpText(
      'after',
      `
Files and slices are recorded once loaded and skipped by later runs (a file is named by its path,
size and modification time, so a changed file is loaded again); --force loads them again. A file
whose every row is rejected loads nothing and is not recorded. A --strict run reads again a file
that an earlier run without --strict loaded with rejected rows, and reports it rejected (exit 1):
--strict writes nothing of it, and the rows that earlier run stored stay.

Incremental (--since-last, --days, --prepend, --all with an exchange): each currency's range
follows from what is stored; it is loaded one day slice at a time, each slice committed and
recorded with its rows, so a killed run is resumed by running it again and nothing is loaded
twice. One progress bar covers the whole run (on a terminal; plain lines on stderr otherwise),
then one line per currency: rows loaded, rows skipped as already stored, and the range asked for.
Currencies without a stored candle are left alone by --since-last without --days and by --prepend.
Page sizes: Binance 1,000 candles a call, Coinbase 300; Kraken serves only its last 720 candles of
each size (12 hours of 1m candles), so older ranges are cut to what it has.

--source binance-archive (with --code or --all and the range options above; candles of at most
1d): Binance's public archives under BINANCE_ARCHIVE_URL, a monthly zip per ended month of the
range and a daily zip per ended day of the other months (the current one, the edges); each is
checked against its .CHECKSUM before a row is read (a mismatch refuses the archive: nothing of
it is loaded, the others are, exit 1; a rerun tries it again) and is loaded from memory, never
written to disk. A month not published falls back to its days, a day not published to REST
klines (BINANCE_API_URL), as does what no archive holds yet (today, partial days). Each archive
is recorded once loaded: a rerun downloads and loads nothing twice; a killed run resumes.

Examples:
  $ platform backfill ./history/BTCUSDT-1m-2025-01.zip
  $ platform backfill ./history --strict --json
  $ platform backfill ./history --enqueue
  $ platform backfill --source binance --code BTC --from 2025-01-01 --to 2025-02-01 --interval 1h
  $ platform backfill --source binance --all --since-last --days 30
  $ platform backfill --source coinbase --all --days 7
  $ platform backfill --source binance --all --prepend --days 90
  $ platform backfill --source binance-archive --code BTC --from 2021-01-01
  $ platform backfill --source binance-archive --all --since-last --days 365
  $ platform backfill --source simulated --days 7`,
    );
  withExitCodes(backfill, {
    ok:
      'every file or slice loaded (or was already loaded) and no row was rejected;\n' +
      'with --enqueue: every job queued (the worker reports how each load went)',
    failure:
      'a file or slice failed or was rejected whole, or rows were rejected\n' +
      '(the summary lists them as file:line reason), or the database failed;\n' +
      'incremental: a currency failed or the exchange stayed unreachable (rerun to resume);\n' +
      'binance-archive: also an archive refused (checksum mismatch, damaged zip)',
  });
  backfill.action(async (paths: string[], options: BackfillOptions, command: Command) => {
    const { runBackfill } = await import('./backfillRun.ts');
    await runBackfill(paths, options, command);
  });
}

function parseDays(text: string): number {
  const days = Number(text);
  if (!Number.isInteger(days) || days < 1 || days > 36_500) {
    throw new InvalidArgumentError('a whole number of days from 1 to 36500');
  }
  return days;
}
