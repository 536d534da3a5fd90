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
import { configSchema } from '../../shared/config.ts';
import { configFromCommand } from '../context.ts';

// `platform export`, loaded only when the command runs (keeps the CLI's start-up light).

export interface ExportOptions {
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

/** Streams the candles of one currency to stdout, as the export route does over HTTP. */
export async function runExport(code: string, options: ExportOptions, command: Command) {
  const { code: currency, input } = parseInput(code, options, command);
  const config = configFromCommand(command, configSchema);
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
}
