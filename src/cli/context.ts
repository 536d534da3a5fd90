import type { Command } from 'commander';
import { loadConfig, type Config } from '../shared/config.ts';

/** Configuration from the environment plus global CLI flags such as --platform.load.currency=false. */
export function configFromCommand(command: Command): Config {
  const globals = command.optsWithGlobals<{ 'platform.load.currency'?: string }>();
  const loadCurrencies = globals['platform.load.currency'];
  return loadConfig(
    process.env,
    loadCurrencies === undefined ? {} : { PLATFORM_LOAD_CURRENCIES: loadCurrencies },
  );
}

export function printJson(value: unknown) {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
