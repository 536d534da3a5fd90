import type { Command } from 'commander';
import { withExamples, withExitCodes } from '../help.ts';

export function registerDoctorCommand(program: Command) {
  const doctor = program
    .command('doctor')
    .description(
      'Check database, extension, edition, migrations, workers, job queue and feed; say what to fix',
    )
    .option('--json', 'print {"healthy", "checks": [{"name", "ok", "detail", "fix"}]}');
  withExamples(doctor, [
    'platform doctor',
    "platform doctor --json | jq '.checks[] | select(.ok == false)'",
    'DATABASE_URL=postgres://platform@db:5432/platform platform doctor',
  ]);
  withExitCodes(doctor, {
    ok: 'healthy: every check passed',
    failure: 'a check failed (each FAIL line says what to fix)',
  }).action(async (options: { json?: boolean }, command: Command) => {
    const { runDoctorCommand } = await import('./doctorRun.ts');
    await runDoctorCommand(options, command);
  });
}
