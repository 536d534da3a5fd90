import type { Command } from 'commander';
import { dedicatedConnection } from '../../data/ingest/connection.ts';
import { historySources } from '../../data/ingest/exchange/sources.ts';
import { healAll, observedCodes, type HealResult } from '../../data/ingest/heal/heal.ts';
import { printable } from '../../shared/printable.ts';
import { configSchema } from '../../shared/config.ts';
import { configFromCommand, printJson } from '../context.ts';
import { EXIT } from '../exitCodes.ts';

export interface HealCommandOptions {
  code?: string[];
  hours: number;
  json?: boolean;
}

/** `platform heal`, loaded only when the command runs (keeps the CLI's start-up light). */
export async function runHeal(options: HealCommandOptions, command: Command) {
  const config = configFromCommand(command, configSchema);
  const connect = dedicatedConnection(config.DATABASE_URL);
  const sources = historySources(config, {
    onWait: (reason, ms) => {
      if (ms >= 1000)
        process.stderr.write(`heal: waiting ${Math.ceil(ms / 1000)} s (${printable(reason)})\n`);
    },
  });
  const codes = options.code?.map((c) => c.toUpperCase()) ?? (await observedCodes(connect));
  const results = await healAll(connect, sources, codes, { lookbackHours: options.hours });
  if (options.json) printJson(results);
  else process.stdout.write(results.map(formatResult).join(''));
  process.exitCode = results.some((r) => r.errors.length > 0) ? EXIT.failure : EXIT.ok;
}

/** Codes come from the arguments and errors from the exchanges' answers: both escaped. */
function formatResult(r: HealResult): string {
  const code = printable(r.code);
  if (r.skipped) return `${code}: skipped (another heal pass holds it)\n`;
  const by = Object.entries(r.bySource)
    .map(([source, n]) => `${n} from ${source}`)
    .join(', ');
  const errors = r.errors.map((e) => `  failed: ${printable(e)}\n`).join('');
  return `${code}: ${r.missing} missing minute(s), ${r.filled} filled${by ? ` (${by})` : ''}, ${r.knownGaps} new known gap(s)\n${errors}`;
}
