import type { Command } from 'commander';
import { withExamples, withExitCodes } from '../help.ts';
import type { ExportOptions } from './exportRun.ts';

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
    const { runExport } = await import('./exportRun.ts');
    await runExport(code, options, command);
  });
}
