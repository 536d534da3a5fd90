import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { ADMIN_URL } from '../support/database.ts';
import { eventually } from '../support/wait.ts';
import { setSnapshot } from '../support/prices.ts';
import {
  feedsListening,
  publishTick,
  startLiveHarness,
  type LiveHarness,
} from '../support/live.ts';

// RESTARTS THE WHOLE POSTGRESQL SERVER under connected clients. Other test files running at the
// same time lose their connections for a few seconds, so this only runs when asked:
//   LIVE_DB_RESTART_TESTS=1 npm test -- test/api/liveDatabaseRestart.test.ts
// (as root on Debian, where pg_ctlcluster manages the server). The default suite covers the
// same recovery path for the feed by terminating its connection (liveSubscriptions.test.ts).
const enabled = process.env.LIVE_DB_RESTART_TESTS === '1';
const describeRestart = enabled ? describe : describe.skip;

let harness: LiveHarness;

function clusterOf(): [string, string] {
  const line = execFileSync('pg_lsclusters', ['--no-header'], { encoding: 'utf8' })
    .split('\n')
    .find((l) => /\b5432\b/.test(l));
  const [version, name] = (line ?? '').trim().split(/\s+/);
  if (!version || !name) throw new Error('no PostgreSQL cluster on port 5432');
  return [version, name];
}

async function serverAnswers(): Promise<boolean> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

describeRestart('the database restarting under connected clients', () => {
  beforeAll(async () => {
    harness = await startLiveHarness({ instances: 2 });
    await feedsListening(harness);
  });

  afterAll(async () => {
    await harness?.close();
  });

  test('clients keep receiving prices and portfolio updates afterwards', async () => {
    const owner = await harness.signUp(0);
    const first = await harness.trader({ instance: 0, codes: ['BTC'] });
    const second = await harness.trader({ instance: 1, codes: ['BTC'], cookie: owner.cookie });
    await setSnapshot(harness.runtime.pool, 'BTC', 100, harness.clock.now());
    await publishTick(harness.runtime.pool, harness.clock.now(), { BTC: 100 });
    await first.waitForPrice('BTC', 100);

    const [version, name] = clusterOf();
    execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', version, name, 'restart'], {
      stdio: 'ignore',
    });
    await eventually(serverAnswers, 30_000, 'the server back');
    await eventually(
      () => harness.instances.every((i) => i.service.live.feedListening),
      30_000,
      'feeds listening again',
    );

    // The pools' dead connections are replaced on the next checkout; retry the first write.
    const afterRestart = harness.clock.next();
    await eventually(
      () =>
        publishTick(harness.runtime.pool, afterRestart, { BTC: 105 }).then(
          () => true,
          () => false,
        ),
      15_000,
      'a tick after the restart',
    );
    await first.waitForPrice('BTC', 105, 15_000);
    await second.waitForPrice('BTC', 105, 15_000);

    // The adapter reconnected too: a holding added through instance 1 reaches instance 2.
    await eventually(
      async () => {
        const r = await owner.client.post('/api/portfolio/add', {
          currencyCode: 'BTC',
          shares: 1,
          walletDollars: 0,
        });
        if (r.status !== 200 && r.status !== 503) throw new Error(`add: ${r.status} ${r.text}`);
        return r.status === 200;
      },
      15_000,
      'portfolio add after the restart',
    );
    await eventually(() => second.portfolios.length > 0, 15_000, 'portfolio on instance 2');
    expect(second.portfolios.at(-1)).toMatchObject({ shareBalance: 105, assets: [{ shares: 1 }] });
  }, 120_000);
});

if (!enabled) {
  test('the database restart test is opt-in (LIVE_DB_RESTART_TESTS=1)', () => {
    expect(enabled).toBe(false);
  });
}
