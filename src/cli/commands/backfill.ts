import { InvalidArgumentError, Option, type Command } from 'commander';
import { sql } from 'slonik';
import { z } from 'zod';
import { shippedCurrencies, upsertCurrencies } from '../../data/currencies/catalog.ts';
import { ARCHIVE_SOURCE } from '../../data/ingest/archive/archivePlan.ts';
import { dedicatedConnection } from '../../data/ingest/connection.ts';
import {
  EXCHANGE_SOURCES,
  expectedCandles,
  importExchangeSlice,
  INTERVALS,
  intervalMs,
  planSlices,
  type ExchangeSource,
} from '../../data/ingest/exchange/exchangeBackfill.ts';
import { createCandleSource } from '../../data/ingest/exchange/sources.ts';
import { expandInputs, planFile, type PlannedFile } from '../../data/ingest/files.ts';
import { importFile } from '../../data/ingest/importFile.ts';
import { enqueueFileJobs, enqueueSliceJobs } from '../../data/ingest/jobs.ts';
import { failedResult } from '../../data/ingest/loader.ts';
import { SIMULATED_SOURCE } from '../../data/ingest/simulated/days.ts';
import {
  enqueueSimulatedHistory,
  SIMULATED_HISTORY_TASK,
  simulatedOnly,
} from '../../data/ingest/simulated/firstStart.ts';
import { loadSimulatedHistory } from '../../data/ingest/simulated/simulatedHistory.ts';
import {
  formatSummary,
  SummaryCollector,
  type BackfillSummary,
} from '../../data/ingest/summary.ts';
import { parseIsoMicros } from '../../data/ingest/timeParsing.ts';
import type { Config } from '../../shared/config.ts';
import { ensureDatabase } from '../../shared/db/ensureDatabase.ts';
import { migrate } from '../../shared/db/migrate.ts';
import { createDatabasePool } from '../../shared/db/pool.ts';
import { createLogger } from '../../shared/logger.ts';
import { printable } from '../../shared/printable.ts';
import type { RangeMode } from '../../data/ingest/exchange/incremental.ts';
import { configFromCommand, printJson } from '../context.ts';
import { EXIT } from '../exitCodes.ts';
import { withExitCodes } from '../help.ts';
import { createProgress } from '../progress.ts';
import { runArchiveBackfill } from './backfillArchive.ts';
import { runIncrementalBackfill, type IncrementalOptions } from './backfillIncremental.ts';

const DAY_MS = 86_400_000;

interface BackfillOptions {
  strict?: boolean;
  force?: boolean;
  enqueue?: boolean;
  json?: boolean;
  code?: string;
  source?: ExchangeSource | typeof SIMULATED_SOURCE | typeof ARCHIVE_SOURCE;
  days?: number;
  from?: string;
  to?: string;
  interval: string;
  quote?: string;
  all?: boolean;
  sinceLast?: boolean;
  prepend?: boolean;
}

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
    const usage = (message: string) => command.error(`error: ${message}`, { exitCode: EXIT.usage });
    if (options.source === ARCHIVE_SOURCE) {
      if (options.enqueue) usage('--source binance-archive loads here; it does not take --enqueue');
      if (intervalMs(options.interval) > DAY_MS)
        usage('--source binance-archive takes candles of at most 1d (--interval)');
      const archive = incrementalOptions(paths, { ...options, source: 'binance' }, usage);
      const config = configFromCommand(command);
      await prepareDatabase(config);
      process.exitCode = await runArchiveBackfill(config, archive);
      return;
    }
    if (options.source !== SIMULATED_SOURCE && isIncremental(options)) {
      const incremental = incrementalOptions(paths, options, usage);
      const config = configFromCommand(command);
      await prepareDatabase(config);
      process.exitCode = await runIncrementalBackfill(config, incremental);
      return;
    }
    if (options.source === SIMULATED_SOURCE) {
      if (paths.length > 0) usage('give either paths or --source, not both');
      if (options.from || options.to) usage('--source simulated takes --days, not --from/--to');
      if ((options.days ?? 0) > 366) usage('--source simulated takes at most 366 days');
      if (options.all || options.sinceLast || options.prepend)
        usage('--all, --since-last and --prepend go with an exchange, not --source simulated');
    } else if (options.source) {
      if (paths.length > 0) usage('give either paths or --source, not both');
      if (!options.code || !options.from || !options.to) {
        usage('--source needs --code, --from and --to');
      }
    } else if (paths.length === 0) {
      usage('give files or directories to load, or --source with --code, --from and --to');
    }
    const config = configFromCommand(command);
    if (options.source === SIMULATED_SOURCE && !simulatedOnly(config)) {
      usage(
        'simulated history goes only into a platform on the simulated market (MARKET_SOURCE=simulated): it would mix invented prices with real ones',
      );
    }
    await prepareDatabase(config);
    const summary =
      options.source === SIMULATED_SOURCE
        ? await backfillSimulated(config, options)
        : options.source
          ? await backfillFromExchange(config, { ...options, source: options.source }, usage)
          : await backfillFiles(config, paths, options);
    if (!summary) return;
    if (options.json) printJson(summary);
    else process.stdout.write(formatSummary(summary, options.source ? 'slice' : 'file'));
    process.exitCode = summaryExitCode(summary);
  });
}

function isIncremental(o: BackfillOptions): boolean {
  return !!(o.all || o.sinceLast || o.prepend || o.days !== undefined);
}

/** Checks the incremental options against each other; a contradiction is a usage error (2). */
function incrementalOptions(
  paths: string[],
  o: BackfillOptions,
  usage: (message: string) => never,
): IncrementalOptions {
  const source = o.source;
  if (!source || source === SIMULATED_SOURCE || source === ARCHIVE_SOURCE)
    usage('--all, --since-last, --days and --prepend need --source with an exchange');
  if (paths.length > 0) usage('give either paths or --source, not both');
  if (o.enqueue) usage('--enqueue works with --code, --from and --to only');
  if (!!o.all === !!o.code) usage('give either --all or --code');
  const code = o.code?.toUpperCase();
  if (code !== undefined && !/^[A-Z0-9]{1,15}$/.test(code))
    usage('--code must be 1 to 15 letters or digits');
  const days = o.days;
  const ranged = o.from !== undefined || o.to !== undefined;
  if ([o.sinceLast, o.prepend, ranged].filter(Boolean).length > 1)
    usage('give one of --since-last, --prepend or --from/--to');
  let mode: RangeMode;
  if (o.sinceLast) mode = { kind: 'since-last', ...(days !== undefined ? { days } : {}) };
  else if (o.prepend) {
    if (days === undefined) usage('--prepend needs --days N (how far back to extend)');
    mode = { kind: 'prepend', days };
  } else if (ranged) {
    if (days !== undefined) usage('give either --days or --from/--to');
    const fromMs = parseTimeOption(o.from ?? '', '--from', usage);
    const toMs = o.to === undefined ? Date.now() : parseTimeOption(o.to, '--to', usage);
    if (fromMs >= toMs) usage('--from must be before --to');
    mode = { kind: 'between', fromMs, toMs };
  } else if (days !== undefined) mode = { kind: 'days', days };
  else usage('give --since-last, --days N, --prepend --days N or --from/--to');
  return {
    source,
    ...(code ? { code } : {}),
    mode,
    interval: o.interval,
    ...(o.quote ? { quote: o.quote } : {}),
    force: !!o.force,
    json: !!o.json,
  };
}

/** What --help promises: 1 when anything of the input was not loaded, be it a file or a row. */
function summaryExitCode(summary: BackfillSummary): number {
  const incomplete = summary.failed > 0 || summary.rejectedUnits > 0 || summary.rejected > 0;
  return incomplete ? EXIT.failure : EXIT.ok;
}

/** A fresh database works too: created, migrated, and given the shipped currency list. */
async function prepareDatabase(config: Config) {
  const logger = createLogger(config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL);
  await ensureDatabase(config.DATABASE_URL);
  await migrate(config.DATABASE_URL, logger);
  const pool = await createDatabasePool(config.DATABASE_URL, { maxPoolSize: 1 });
  try {
    const count = await pool.oneFirst(
      sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM currencies`,
    );
    if (count === 0)
      await upsertCurrencies(
        pool,
        shippedCurrencies().map((c, i) => ({ ...c, rank: i + 1 })),
      );
  } finally {
    await pool.end();
  }
}

async function withPool<T>(
  config: Config,
  work: (pool: Awaited<ReturnType<typeof createDatabasePool>>) => Promise<T>,
) {
  const pool = await createDatabasePool(config.DATABASE_URL, { maxPoolSize: 1 });
  try {
    return await work(pool);
  } finally {
    await pool.end();
  }
}

async function backfillFiles(
  config: Config,
  paths: string[],
  options: BackfillOptions,
): Promise<BackfillSummary | null> {
  const collector = new SummaryCollector();
  const { files, missing } = await expandInputs(paths);
  for (const path of missing) collector.add(failedResult(path, 'no such file or directory'));
  const plans: PlannedFile[] = [];
  for (const path of files) {
    try {
      plans.push(await planFile(path));
    } catch (error) {
      collector.add(failedResult(path, error));
    }
  }

  if (options.enqueue) {
    const count = await withPool(config, (pool) =>
      enqueueFileJobs(pool, plans, {
        strict: !!options.strict,
        force: !!options.force,
        ...(options.code ? { code: options.code } : {}),
      }),
    );
    reportEnqueued(count, 'file', options.json);
    const summary = collector.result();
    if (summary.failed > 0) {
      process.stdout.write(formatSummary(summary));
      process.exitCode = EXIT.failure;
    }
    return null;
  }

  const total = plans.reduce((sum, p) => sum + p.progressBytes, 0);
  const progress = createProgress(total, { quiet: !!options.json });
  const connect = dedicatedConnection(config.DATABASE_URL);
  try {
    for (const plan of plans) {
      let reported = 0;
      const result = await importFile(connect, plan, {
        strict: !!options.strict,
        force: !!options.force,
        ...(options.code ? { code: options.code } : {}),
        onProgress: (rows, bytes) => {
          reported += bytes;
          progress.advance(bytes, rows);
        },
      });
      // Skipped and failed files report no bytes: account for them so the ETA stays honest.
      progress.advance(plan.progressBytes - reported, 0);
      collector.add(result);
    }
  } finally {
    progress.stop();
  }
  return collector.result();
}

/**
 * The simulated market's past, the same days a first start loads (see
 * src/data/ingest/simulated/): existing rows win, so over stored prices it only fills gaps.
 */
async function backfillSimulated(
  config: Config,
  options: BackfillOptions,
): Promise<BackfillSummary | null> {
  const request = {
    seed: config.MARKET_SIMULATED_SEED,
    untilMs: Date.now(),
    days: options.days ?? 30,
    ...(options.code ? { codes: [options.code.toUpperCase()] } : {}),
  };
  if (options.enqueue) {
    const key = `${SIMULATED_HISTORY_TASK}:${Math.floor(request.untilMs / 60_000)}:${options.code ?? '*'}`;
    await withPool(config, (pool) => enqueueSimulatedHistory(pool, request, key));
    reportEnqueued(1, 'simulated history', options.json);
    return null;
  }
  const progress = createProgress(request.days, { quiet: !!options.json });
  const collector = new SummaryCollector();
  try {
    const results = await loadSimulatedHistory(dedicatedConnection(config.DATABASE_URL), request, {
      force: !!options.force,
      onDay: (result) => progress.advance(1, result.read),
    });
    for (const result of results) collector.add(result);
  } finally {
    progress.stop();
  }
  return collector.result();
}

function parseDays(text: string): number {
  const days = Number(text);
  if (!Number.isInteger(days) || days < 1 || days > 36_500) {
    throw new InvalidArgumentError('a whole number of days from 1 to 36500');
  }
  return days;
}

async function backfillFromExchange(
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

function parseTimeOption(text: string, name: string, usage: (message: string) => never): number {
  const micros = parseIsoMicros(text.trim());
  if (micros === null) usage(`${name} must be an ISO 8601 date or time, e.g. 2024-01-01`);
  return Math.floor(micros / 1000);
}

function reportEnqueued(count: number, unit: string, json?: boolean) {
  if (json) return printJson({ enqueued: count });
  process.stdout.write(
    `enqueued ${count} ${unit} job${count === 1 ? '' : 's'}; workers (platform start --role worker) load them, each once\n`,
  );
}
