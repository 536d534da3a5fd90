import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, test } from '@jest/globals';
import { PROVISION_SCRIPT } from '../../src/shared/provision.ts';

const run = promisify(execFile);

// The suite only runs on a provisioned server (globalSetup insists), so here the script must take
// its fast "already done" path and change nothing.
test('a second provisioning run does nothing, in under two seconds', async () => {
  const started = performance.now();
  const { stdout, stderr } = await run('bash', [PROVISION_SCRIPT]);
  const seconds = (performance.now() - started) / 1000;
  expect(`${stdout}${stderr}`).toMatch(/already provisioned \(2\.\d+\.\d+/);
  expect(seconds).toBeLessThan(2);
});

test('--check reports the provisioned state with exit code 0', async () => {
  const { stdout, stderr } = await run('bash', [PROVISION_SCRIPT, '--check']);
  expect(`${stdout}${stderr}`).toMatch(/timescaledb/i);
});

test('an unreachable server is reported, not mistaken for "already done"', async () => {
  const failure = await run('bash', [PROVISION_SCRIPT, '--check'], {
    env: { ...process.env, PGHOST: '127.0.0.1', PGPORT: '1', DATABASE_URL: '' },
  }).catch((error: { code: number; stderr: string }) => error);
  expect((failure as { code?: number }).code).not.toBe(0);
});
