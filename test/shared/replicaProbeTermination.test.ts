import { afterAll, beforeAll, expect, test } from '@jest/globals';
import pg from 'pg';
import { ReplicaMonitor } from '../../src/shared/db/replicaMonitor.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

// A replica going down (a restart, a failover) ends the probe's sessions with a FATAL error at
// any moment, also between a probe's answer and the release of its connection, when the client
// is checked out of its pool and not running a query. That must be a failed probe, never an
// unhandled 'error' event that ends the data module's process. Here the "replica" is the test
// database itself and every probe session is terminated again and again while the monitor
// probes; without a listener on checked-out clients the process died within a few seconds.

const PROBES = 600;
const PROBE_APPLICATION = 'platform replica probe';

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
});

afterAll(async () => {
  await database?.drop();
});

test('probe sessions ended at any moment fail their probe, never the process', async () => {
  const monitor = new ReplicaMonitor(database.url, [database.url], {
    maxLagSeconds: 1,
    connectTimeoutMs: 5_000,
  });
  const killer = new pg.Client({ connectionString: database.url });
  killer.on('error', () => {});
  await killer.connect();
  let probing = true;
  let terminated = 0;
  const terminating = (async () => {
    while (probing) {
      const result = await killer.query<{ n: number }>(
        `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n
         FROM pg_stat_activity WHERE application_name = $1 AND datname = $2`,
        [PROBE_APPLICATION, database.name],
      );
      terminated += result.rows[0]!.n;
    }
  })();
  const outcomes = new Map<string, number>();
  try {
    for (let i = 0; i < PROBES; i++) {
      await monitor.probeNow();
      const reason = monitor.status()[0]!.reason ?? 'in use';
      outcomes.set(reason, (outcomes.get(reason) ?? 0) + 1);
    }
  } finally {
    probing = false;
    await terminating;
    await monitor.close();
    await killer.end();
  }
  // Sessions were really ended under the probes, and probes still got through between them (a
  // primary answers that it is not in recovery).
  expect(terminated).toBeGreaterThan(0);
  expect(outcomes.get('not a streaming replica (not in recovery)') ?? 0).toBeGreaterThan(0);
});
