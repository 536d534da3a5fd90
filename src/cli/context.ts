import type { Command } from 'commander';
import type { z } from 'zod';
import { parseEnvironment } from '../shared/config/parse.ts';

/**
 * The configuration a command reads (`schema`: the whole one from src/shared/config.ts, or the
 * sections it needs) from the environment plus global CLI flags such as
 * --platform.load.currency=false.
 */
export function configFromCommand<S extends z.ZodObject>(command: Command, schema: S): z.infer<S> {
  const globals = command.optsWithGlobals<{ 'platform.load.currency'?: string }>();
  const loadCurrencies = globals['platform.load.currency'];
  return parseEnvironment(
    schema,
    process.env,
    loadCurrencies === undefined ? {} : { PLATFORM_LOAD_CURRENCIES: loadCurrencies },
  );
}

export function printJson(value: unknown) {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
