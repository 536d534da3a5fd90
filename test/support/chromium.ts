import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { hostFacts, type HostFacts } from '../../src/shared/provision.ts';

// The dashboard's browser test needs Chromium. playwright-core's own browser download cannot work
// on these machines, so it is Debian's `chromium` package, installed here the first time the test
// runs (as root on Debian), as globalSetup provisions TimescaleDB: `npm test` needs no other step.

const run = promisify(execFile);

/** Where Debian's package puts the browser. */
export const DEBIAN_CHROMIUM = '/usr/bin/chromium';

export type ChromiumStep =
  { action: 'none' } | { action: 'apt-install' } | { action: 'tell-operator'; message: string };

export function chromiumStep(path: string, exists: boolean, host: HostFacts): ChromiumStep {
  if (exists) return { action: 'none' };
  // Only the package's own path: a CHROMIUM_PATH pointing elsewhere is not apt's to fill.
  if (path === DEBIAN_CHROMIUM && host.root && host.debian) return { action: 'apt-install' };
  const fix =
    path !== DEBIAN_CHROMIUM
      ? 'CHROMIUM_PATH names no file; point it at a Chromium binary'
      : host.debian
        ? 'run `sudo apt-get install -y chromium`'
        : 'install Chromium and set CHROMIUM_PATH to its binary';
  return {
    action: 'tell-operator',
    message: `Chromium is not installed at ${path}: ${fix} (or set SKIP_BROWSER_TESTS=1 to skip the browser test)`,
  };
}

/** Makes sure Chromium is at `path`, installing Debian's package where this machine can. */
export async function ensureChromium(path: string, host: HostFacts = hostFacts()): Promise<void> {
  const step = chromiumStep(path, existsSync(path), host);
  if (step.action === 'none') return;
  if (step.action === 'tell-operator') throw new Error(step.message);
  process.stderr.write(`\nChromium is missing at ${path}: apt-get install -y chromium\n`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  // Waits for a dpkg lock another run (another checkout's test) holds instead of failing.
  const install = () =>
    run('apt-get', ['-o', 'DPkg::Lock::Timeout=600', 'install', '-y', '-q', 'chromium'], {
      env,
      maxBuffer: 64 * 1024 * 1024,
    });
  try {
    await install();
  } catch {
    // Typical on a fresh machine: empty or stale package lists.
    await run('apt-get', ['-o', 'DPkg::Lock::Timeout=600', 'update', '-q'], {
      env,
      maxBuffer: 64 * 1024 * 1024,
    });
    await install();
  }
  if (!existsSync(path))
    throw new Error(`apt-get installed chromium, but ${path} is still missing`);
}
