import type { Command } from 'commander';
import type { ExchangeSource } from '../../data/ingest/exchange/exchangeBackfill.ts';
import type { RangeMode } from '../../data/ingest/exchange/incremental.ts';
import { SIMULATED_SOURCE } from '../../data/ingest/simulated/days.ts';
import { ARCHIVE_SOURCE } from '../../data/ingest/archive/archivePlan.ts';
import { intervalMs } from '../../data/ingest/exchange/intervals.ts';
import { formatSummary, type BackfillSummary } from '../../data/ingest/summary.ts';
import type { Config } from '../../shared/config.ts';
import { databaseSection, type DatabaseConfig } from '../../shared/config/database.ts';
import {
  observabilitySection,
  type ObservabilityConfig,
} from '../../shared/config/observability.ts';
import { connectCreatingDatabase } from '../../shared/db/ensureDatabase.ts';
import { migrate } from '../../shared/db/migrate.ts';
import { SESSION_OPTIONS } from '../../shared/db/sessionSettings.ts';
import { configFromCommand, printJson } from '../context.ts';
import { EXIT } from '../exitCodes.ts';
import { parseTimeOption, type BackfillOptions } from './backfillCommon.ts';
import type { IncrementalOptions } from './backfillIncremental.ts';

// `platform backfill`, loaded only when the command runs (keeps the CLI's start-up light). Each
// way of backfilling is a module of its own, loaded when asked for: loading files needs neither
// the exchanges' clients nor the job queue's.

const DAY_MS = 86_400_000;

/**
 * What loading files reads of the configuration: the database and the log level, parsed by the
 * same rules as the whole configuration, without building the rest of the schema before the
 * first row. The other ways of backfilling read the whole configuration.
 */
const fileBackfillConfig = databaseSection.extend(observabilitySection.shape);

async function wholeConfig(command: Command): Promise<Config> {
  const { configSchema } = await import('../../shared/config.ts');
  return configFromCommand(command, configSchema);
}

/** Checks the options against each other, loads what they name and prints the summary. */
export async function runBackfill(paths: string[], options: BackfillOptions, command: Command) {
  const usage = (message: string) => command.error(`error: ${message}`, { exitCode: EXIT.usage });
  if (options.source === ARCHIVE_SOURCE) {
    if (options.enqueue) usage('--source binance-archive loads here; it does not take --enqueue');
    if (intervalMs(options.interval) > DAY_MS)
      usage('--source binance-archive takes candles of at most 1d (--interval)');
    const archive = incrementalOptions(paths, { ...options, source: 'binance' }, usage);
    const config = await wholeConfig(command);
    const [{ runArchiveBackfill }] = await Promise.all([
      import('./backfillArchive.ts'),
      prepareDatabase(config),
    ]);
    process.exitCode = await runArchiveBackfill(config, archive);
    return;
  }
  if (options.source !== SIMULATED_SOURCE && isIncremental(options)) {
    const incremental = incrementalOptions(paths, options, usage);
    const config = await wholeConfig(command);
    const [{ runIncrementalBackfill }] = await Promise.all([
      import('./backfillIncremental.ts'),
      prepareDatabase(config),
    ]);
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
  const summary =
    options.source === SIMULATED_SOURCE
      ? await backfillSimulated(await wholeConfig(command), options, usage)
      : options.source
        ? await backfillFromExchange(
            await wholeConfig(command),
            { ...options, source: options.source },
            usage,
          )
        : await backfillFiles(configFromCommand(command, fileBackfillConfig), paths, options);
  if (!summary) return;
  if (options.json) printJson(summary);
  else process.stdout.write(formatSummary(summary, options.source ? 'slice' : 'file'));
  process.exitCode = summaryExitCode(summary);
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

async function backfillFiles(
  config: DatabaseConfig & ObservabilityConfig,
  paths: string[],
  options: BackfillOptions,
) {
  const [files] = await Promise.all([import('./backfillFiles.ts'), prepareDatabase(config)]);
  return files.backfillFiles(config, paths, options);
}

async function backfillFromExchange(
  config: Config,
  options: BackfillOptions & { source: ExchangeSource },
  usage: (message: string) => never,
) {
  const [exchange] = await Promise.all([import('./backfillExchange.ts'), prepareDatabase(config)]);
  return exchange.backfillFromExchange(config, options, usage);
}

async function backfillSimulated(
  config: Config,
  options: BackfillOptions,
  usage: (message: string) => never,
) {
  const simulated = await import('./backfillSimulated.ts');
  if (!simulated.simulatedOnly(config)) {
    usage(
      'simulated history goes only into a platform on the simulated market (MARKET_SOURCE=simulated): it would mix invented prices with real ones',
    );
  }
  await prepareDatabase(config);
  return simulated.backfillSimulated(config, options);
}

/** What --help promises: 1 when anything of the input was not loaded, be it a file or a row. */
function summaryExitCode(summary: BackfillSummary): number {
  const incomplete = summary.failed > 0 || summary.rejectedUnits > 0 || summary.rejected > 0;
  return incomplete ? EXIT.failure : EXIT.ok;
}

/**
 * A fresh database works too: created, migrated, and given the shipped currency list. All on one
 * plain node-postgres connection: each connection costs a round trip and a server process before
 * the first row, and Slonik (with what it loads) is needed only to seed an empty currency list.
 */
async function prepareDatabase(config: DatabaseConfig & ObservabilityConfig) {
  const level = config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL;
  const client = await connectCreatingDatabase(config.DATABASE_URL, { options: SESSION_OPTIONS });
  try {
    // The logger only speaks when migrations run: made then, not loaded by every backfill.
    await migrate(
      config.DATABASE_URL,
      async () => (await import('../../shared/logger.ts')).createLogger(level),
      client,
    );
    const { rows } = await client.query<{ listed: boolean }>(
      'SELECT EXISTS (SELECT 1 FROM currencies) AS listed',
    );
    if (!rows[0]?.listed) await seedShippedCurrencies(config.DATABASE_URL);
  } finally {
    await client.end();
  }
}

async function seedShippedCurrencies(url: string) {
  const [{ shippedCurrencies, upsertCurrencies }, { createDatabasePool }] = await Promise.all([
    import('../../data/currencies/catalog.ts'),
    import('../../shared/db/pool.ts'),
  ]);
  const pool = await createDatabasePool(url, { maxPoolSize: 1 });
  try {
    await upsertCurrencies(
      pool,
      shippedCurrencies().map((c, i) => ({ ...c, rank: i + 1 })),
    );
  } finally {
    await pool.end();
  }
}
