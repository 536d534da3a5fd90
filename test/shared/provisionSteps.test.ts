import { describe, expect, test } from '@jest/globals';
import {
  ensureTimescale,
  provisionStep,
  type HostFacts,
  type ServerState,
} from '../../src/shared/provision.ts';
import { chromiumStep, DEBIAN_CHROMIUM } from '../support/chromium.ts';
import { ADMIN_URL, withAdmin } from '../support/database.ts';

// What `npm start` and `npm test` do about a server without TimescaleDB, and the browser test
// about a machine without Chromium, decided for every case without uninstalling anything; then
// ensureTimescale() against this machine's real, provisioned server.

const WHERE = '127.0.0.1:5432';
const rootDebian: HostFacts = { root: true, debian: true };
const userDebian: HostFacts = { root: false, debian: true };
const rootElsewhere: HostFacts = { root: true, debian: false };
const userElsewhere: HostFacts = { root: false, debian: false };
const HOSTS = [rootDebian, userDebian, rootElsewhere, userElsewhere];

const provisioned: ServerState = { reachable: true, available: true, preloaded: true };
const notInstalled: ServerState = { reachable: true, available: false, preloaded: false };
const notPreloaded: ServerState = { reachable: true, available: true, preloaded: false };
const unreachable: ServerState = { reachable: false, available: false, preloaded: false };

describe('provisionStep', () => {
  test('a provisioned server is left alone on every host: no script, so no restart', () => {
    for (const host of HOSTS) {
      expect(provisionStep(provisioned, host, WHERE)).toEqual({ action: 'none' });
    }
  });

  test('as root on Debian the script runs for whatever is missing', () => {
    expect(provisionStep(notInstalled, rootDebian, WHERE)).toEqual({
      action: 'run-script',
      reason: `TimescaleDB is not installed in the PostgreSQL server at ${WHERE}`,
    });
    expect(provisionStep(notPreloaded, rootDebian, WHERE)).toEqual({
      action: 'run-script',
      reason: expect.stringMatching(/installed .* but not in shared_preload_libraries/),
    });
    // The script starts a stopped local cluster.
    expect(provisionStep(unreachable, rootDebian, WHERE)).toEqual({
      action: 'run-script',
      reason: `PostgreSQL is not reachable at ${WHERE}`,
    });
  });

  test('not root on Debian: what is missing, and the one command to run', () => {
    for (const state of [notInstalled, notPreloaded, unreachable]) {
      const step = provisionStep(state, userDebian, WHERE);
      expect(step.action).toBe('tell-operator');
      const message = (step as { message: string }).message;
      expect(message).toContain(WHERE);
      expect(message).toContain('`sudo npm run db:provision`');
    }
  });

  test('not Debian, root or not: the container route, since the script cannot build here', () => {
    for (const host of [rootElsewhere, userElsewhere]) {
      for (const state of [notInstalled, notPreloaded, unreachable]) {
        const step = provisionStep(state, host, WHERE);
        expect(step.action).toBe('tell-operator');
        const message = (step as { message: string }).message;
        expect(message).toContain('`docker compose up -d timescaledb`');
        expect(message).not.toContain('sudo');
      }
    }
  });
});

describe('ensureTimescale on this machine', () => {
  const postmasterStart = () =>
    withAdmin(async (client) => {
      const { rows } = await client.query<{ started: Date }>(
        'SELECT pg_postmaster_start_time() AS started',
      );
      return rows[0]!.started.getTime();
    });

  test('a provisioned server: returns without running the script or restarting PostgreSQL', async () => {
    const before = await postmasterStart();
    const runs: NodeJS.ProcessEnv[] = [];
    for (const host of HOSTS) {
      await ensureTimescale(ADMIN_URL, {
        host,
        run: async (env) => {
          runs.push(env);
          return 0;
        },
      });
    }
    expect(runs).toEqual([]);
    expect(await postmasterStart()).toBe(before);
  });

  test('an unreachable server, not root: stops with the command to run', async () => {
    await expect(
      ensureTimescale('postgres://root@127.0.0.1:1/postgres', { host: userDebian }),
    ).rejects.toThrow(
      'PostgreSQL is not reachable at 127.0.0.1:1. Run `sudo npm run db:provision` once',
    );
  });

  test('as root on Debian: runs the script against that server, and says so when it fails', async () => {
    const runs: NodeJS.ProcessEnv[] = [];
    const logged: string[] = [];
    const url = 'postgres://root@127.0.0.1:1/postgres';
    await expect(
      ensureTimescale(url, {
        host: rootDebian,
        log: (message) => logged.push(message),
        run: async (env) => {
          runs.push(env);
          return 2; // what the script answers when it cannot provision this server
        },
      }),
    ).rejects.toThrow(/could not be provisioned at 127\.0\.0\.1:1 .*exited with 2/);
    expect(runs.map((env) => env.DATABASE_URL)).toEqual([url]);
    expect(logged).toEqual([expect.stringContaining('running npm run db:provision')]);
  });
});

describe('chromiumStep', () => {
  test('an installed browser is used as it is', () => {
    for (const host of HOSTS) {
      expect(chromiumStep(DEBIAN_CHROMIUM, true, host)).toEqual({ action: 'none' });
    }
  });

  test("missing: Debian's package as root on Debian, else the command to run", () => {
    expect(chromiumStep(DEBIAN_CHROMIUM, false, rootDebian)).toEqual({ action: 'apt-install' });
    expect(chromiumStep(DEBIAN_CHROMIUM, false, userDebian)).toEqual({
      action: 'tell-operator',
      message: expect.stringContaining('`sudo apt-get install -y chromium`'),
    });
    expect(chromiumStep(DEBIAN_CHROMIUM, false, userElsewhere)).toEqual({
      action: 'tell-operator',
      message: expect.stringContaining('set CHROMIUM_PATH'),
    });
  });

  test('a CHROMIUM_PATH that names no file is reported, never filled by apt', () => {
    expect(chromiumStep('/opt/nowhere/chrome', false, rootDebian)).toEqual({
      action: 'tell-operator',
      message: expect.stringContaining('CHROMIUM_PATH names no file'),
    });
  });
});
