import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { currencyExists } from '../../data/currencies/catalog.ts';
import {
  assertZoneKnownToDatabase,
  candleRequestFrom,
  csvLines,
  ndjsonLines,
} from '../../data/history/candleOutput.ts';
import { streamCandles } from '../../data/history/candleStream.ts';
import { candleExportQuery, candleParams } from '../../data/routes/candles/schema.ts';
import { runAbandonable } from '../../shared/abandonment.ts';
import { NotFoundError, ValidationError } from '../../shared/errors.ts';
import { createDatabasePool } from '../../shared/db/pool.ts';
import { configFromCommand } from '../context.ts';
import { withExamples, withExitCodes } from '../help.ts';

interface ExportOptions {
  from?: string;
  to?: string;
  hours?: string;
  interval: string;
  format: string;
  fill: string;
  tz?: string;
  origin?: string;
  offset?: string;
}

/** Options → the same validated input as the export route's query string. */
function parseInput(code: string, options: ExportOptions, command: Command) {
  const params = candleParams.safeParse({ code });
  if (!params.success) command.error(`error: invalid currency code '${code}'`, { exitCode: 2 });
  const raw = Object.fromEntries(
    Object.entries(options).filter(([, value]) => value !== undefined),
  );
  const parsed = candleExportQuery.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    command.error(`error: --${issue.path.join('.') || 'options'}: ${issue.message}`, {
      exitCode: 2,
    });
  }
  return { code: params.data.code, input: parsed.data };
}

/** The window and zone checks the route shares speak of query parameters; here they are options. */
function usageError(command: Command, error: ValidationError): never {
  const detail = error.details[0];
  const option = detail?.path?.replace(/^query\./, '');
  const message = option ? `--${option}: ${detail!.message}` : error.message;
  command.error(`error: ${message}`, { exitCode: 2 });
}

export function registerExportCommand(program: Command) {
  const exportCommand = program
    .command('export <code>')
    .description('Stream the candles of a currency to stdout as CSV or NDJSON (no point cap)')
    .option('--from <instant>', 'start of the window, ISO 8601 (inclusive)')
    .option('--to <instant>', 'end of the window, ISO 8601 (exclusive; default now)')
    .option('--hours <n>', 'window of n hours ending now (instead of --from/--to; default 24)')
    .option('--interval <duration>', 'bucket width: seconds or 1m, 15m, 1h, 4h, 1d, 1w', '60')
    .option('--format <format>', 'csv or ndjson', 'csv')
    .option('--fill <mode>', 'empty buckets: none, null, previous or linear', 'none')
    .option('--tz <zone>', 'IANA time zone for calendar alignment, e.g. Europe/Berlin')
    .option('--origin <instant>', 'align buckets to this instant')
    .option('--offset <duration>', 'shift bucket boundaries, e.g. 6h or -30m');
  withExamples(
    exportCommand,
    [
      'platform export BTC --hours 24 --interval 1m > btc-minutes.csv',
      'platform export ETH --from 2025-01-01T00:00:00Z --to 2026-01-01T00:00:00Z --interval 1h --format ndjson',
      'platform export BTC --hours 720 --interval 1d --tz Europe/Berlin --fill previous',
    ],
    'Rows are the same as GET /data/candles/{code}.',
  );
  withExitCodes(exportCommand, {
    ok:
      'every candle of the window written (none is not an error), or the reader\n' +
      'of stdout stopped reading (`| head`)',
    failure: 'unknown currency, or the database or the output failed',
    usage: 'bad option (a bad code, window, interval, time zone …) or bad configuration',
  });
  exportCommand.action(async (code: string, options: ExportOptions, command: Command) => {
    const { code: currency, input } = parseInput(code, options, command);
    const config = configFromCommand(command);
    const pool = await createDatabasePool(config.DATABASE_URL, { maxPoolSize: 2 });
    // When the reader goes away, the query streaming to it is cancelled at once (as for an HTTP
    // client that hangs up) instead of holding its connection until the driver's deadline.
    const readerGone = new AbortController();
    try {
      if (!(await currencyExists(pool, currency))) {
        throw new NotFoundError(`unknown currency '${currency}'`, 'unknown_currency');
      }
      await assertZoneKnownToDatabase(pool, input.tz);
      const request = candleRequestFrom(currency, input);
      const lines = input.format === 'csv' ? csvLines : ndjsonLines;
      await runAbandonable(readerGone.signal, () =>
        streamCandles(pool, request, (rows) =>
          pipeline(Readable.from(lines(rows)), process.stdout, { end: false }).catch(
            (error: unknown) => {
              if ((error as { code?: string }).code === 'EPIPE') readerGone.abort(error);
              throw error;
            },
          ),
        ),
      );
    } catch (error) {
      if (error instanceof ValidationError) usageError(command, error);
      // The reader of stdout has all it wants (`| head`): stopping is the answer, not an error.
      if (readerGone.signal.aborted) return;
      throw error;
    } finally {
      await pool.end();
    }
  });
}
