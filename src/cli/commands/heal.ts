import { InvalidArgumentError, type Command } from 'commander';
import { withExamples, withExitCodes } from '../help.ts';
import type { HealCommandOptions } from './healRun.ts';

export function registerHealCommand(program: Command) {
  const heal = program
    .command('heal')
    .description(
      'One gap-healing pass now: minutes without any observation in the look-back window are fetched as one-minute candles from the exchanges MARKET_SOURCE names, in its order (Binance when it names none; what one lacks is asked of the next), and loaded without overwriting stored rows. Minutes no exchange has are remembered as known gaps and not asked for again. Kraken keeps only its last 720 one-minute candles (12 hours).',
    )
    .option('--code <code...>', 'only these currencies (default: every currency with observations)')
    .option('--hours <n>', 'look-back window in hours', parseHours, 72)
    .option('--json', 'print one result per currency as JSON');
  withExamples(heal, [
    'platform heal',
    'platform heal --code BTC ETH --hours 6',
    'platform heal --json',
  ]);
  withExitCodes(heal, {
    ok: 'pass done',
    failure:
      'an exchange failed for some minutes (they stay open for the next pass),\n' +
      'or the database failed',
  }).action(async (options: HealCommandOptions, command: Command) => {
    const { runHeal } = await import('./healRun.ts');
    await runHeal(options, command);
  });
}

function parseHours(text: string): number {
  const hours = Number(text);
  if (!Number.isInteger(hours) || hours < 0 || hours > 24 * 366)
    throw new InvalidArgumentError('a whole number of hours from 0 to 8784');
  return hours;
}
