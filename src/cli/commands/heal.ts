import { InvalidArgumentError, type Command } from 'commander';
import { dedicatedConnection } from '../../data/ingest/connection.ts';
import { BinanceKlineClient } from '../../data/ingest/exchange/binanceKlines.ts';
import { healAll, observedCodes, type HealResult } from '../../data/ingest/heal/heal.ts';
import { configFromCommand, printJson } from '../context.ts';
import { EXIT } from '../exitCodes.ts';
import { withExamples } from '../help.ts';

interface HealCommandOptions {
  code?: string[];
  hours: number;
  json?: boolean;
}

export function registerHealCommand(program: Command) {
  const heal = program
    .command('heal')
    .description(
      'One gap-healing pass now: minutes without any observation in the look-back window are fetched as one-minute Binance klines and loaded (never overwriting stored rows); minutes Binance does not have are remembered as known gaps and not asked for again',
    )
    .option('--code <code...>', 'only these currencies (default: every currency with observations)')
    .option('--hours <n>', 'look-back window in hours', parseHours, 72)
    .option('--json', 'print one result per currency as JSON');
  withExamples(
    heal,
    ['platform heal', 'platform heal --code BTC ETH --hours 6', 'platform heal --json'],
    'Exit codes: 0 pass done, 1 an exchange or database failure, 2 usage or configuration error.',
  ).action(async (options: HealCommandOptions, command: Command) => {
    const config = configFromCommand(command);
    const connect = dedicatedConnection(config.DATABASE_URL);
    const client = new BinanceKlineClient({
      baseUrl: config.BINANCE_API_URL,
      timeoutMs: config.BACKFILL_HTTP_TIMEOUT_MS,
    });
    const codes = options.code?.map((c) => c.toUpperCase()) ?? (await observedCodes(connect));
    const results = await healAll(connect, client, codes, { lookbackHours: options.hours });
    if (options.json) printJson(results);
    else process.stdout.write(results.map(formatResult).join(''));
    process.exitCode = EXIT.ok;
  });
}

function parseHours(text: string): number {
  const hours = Number(text);
  if (!Number.isInteger(hours) || hours < 0 || hours > 24 * 366)
    throw new InvalidArgumentError('a whole number of hours from 0 to 8784');
  return hours;
}

function formatResult(r: HealResult): string {
  if (r.skipped) return `${r.code}: skipped (another heal pass holds it)\n`;
  return `${r.code}: ${r.missing} missing minute(s), ${r.filled} filled, ${r.knownGaps} new known gap(s)\n`;
}
