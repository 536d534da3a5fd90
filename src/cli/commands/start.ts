import { Option, type Command } from 'commander';
import { PROCESS_ROLES } from '../../shared/roles.ts';
import { withExamples, withExitCodes } from '../help.ts';
import type { StartOptions } from './startRun.ts';

export function registerStartCommand(program: Command) {
  const start = program
    .command('start')
    .description('Provision (if needed), migrate and run the platform')
    .addOption(
      new Option('--role <role>', 'which part to run')
        .choices(['all', ...PROCESS_ROLES])
        .default('all'),
    )
    .addOption(
      new Option('--profile <profile>', 'docs: the API serves its reference without market data')
        .choices(['default', 'docs'])
        .default('default'),
    );
  withExamples(
    start,
    [
      'platform start',
      'platform start --role data --platform.load.currency=false',
      'platform start --role api --profile docs',
      'WORKER_METRICS_PORT=9465 platform start --role worker',
      'SHUTDOWN_DRAIN_SECONDS=5 SHUTDOWN_GRACE_SECONDS=20 platform start --role data',
    ],
    'Runs until SIGTERM or SIGINT: readiness turns 503, in-flight work finishes within\n' +
      'SHUTDOWN_GRACE_SECONDS, then it exits 0; a second signal exits at once.\n' +
      'Configuration comes from the environment: see docs/configuration.md.',
  );
  withExitCodes(start, {
    ok: 'stopped by SIGTERM or SIGINT after finishing in-flight work',
    failure:
      'could not start (database, TimescaleDB, a port in use), in-flight work outlived\n' +
      'SHUTDOWN_GRACE_SECONDS, or a second signal stopped it at once',
  }).action(async (options: StartOptions, command: Command) => {
    const { runStart } = await import('./startRun.ts');
    await runStart(options, command);
  });
}
