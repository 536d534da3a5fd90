import { afterAll, describe, expect, test } from '@jest/globals';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ADMIN_URL } from '../support/database.ts';
import { ownerAlive, processOwner, runOwner, type RunOwner } from '../support/replicaOwner.ts';
import { replicaUrl } from '../support/replica.ts';
import { removeStaleReplicas } from '../support/staleReplicas.ts';
import {
  createStreamingReplica,
  HOME_PREFIX,
  ownerFile,
  removeReplica,
  replicaUnsupported,
  SLOT_PREFIX,
  type ReplicaCluster,
  type ReplicaRecord,
} from '../support/streamingReplica.ts';

// A test run killed before its teardown leaves its streaming replica running and its slot
// holding WAL on the shared server. The next run's global setup removes them, and only when the
// run that made them is gone: another checkout's run going on at the same time keeps its own.
// The owning run is stood for by a child process, killed when the test says so.

/** A process that lives until it is killed. */
function standInRun() {
  const child = spawn(process.execPath, ['-e', 'process.stdin.resume()'], {
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  return {
    owner: processOwner(child.pid!),
    async kill() {
      child.kill('SIGKILL');
      if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
    },
  };
}

const homes: string[] = [];
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

test('a run owns its replica while its process lives, not once it is gone or its pid reused', async () => {
  const run = standInRun();
  expect(ownerAlive(run.owner)).toBe(true);
  expect(ownerAlive(runOwner())).toBe(true);
  if (run.owner.started !== null) {
    // The same pid, started at another time: another process that was given the pid since.
    expect(ownerAlive({ ...run.owner, started: `${Number(run.owner.started) + 1}` })).toBe(false);
  }
  await run.kill();
  expect(ownerAlive(run.owner)).toBe(false);
});

test('only replicas of dead runs are removed; one without a readable owner is left alone', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'stale-replicas-'));
  homes.push(dir);
  const dead = standInRun();
  await dead.kill();
  const fakeHome = (name: string, owner: RunOwner | undefined) => {
    const home = join(dir, `${HOME_PREFIX}${name}`);
    mkdirSync(join(home, 'data'), { recursive: true });
    if (owner) {
      // No server runs in it and no slot of this name exists: only the decision is tested here.
      const record: ReplicaRecord = {
        owner,
        slot: `${SLOT_PREFIX}run${owner.pid}_0_1`,
        binDir: '/nonexistent',
        dataDir: join(home, 'data'),
      };
      writeFileSync(ownerFile(home), JSON.stringify(record));
    }
    return home;
  };
  const ofDeadRun = fakeHome('dead', dead.owner);
  const ofThisRun = fakeHome('alive', runOwner());
  const beingMade = fakeHome('unowned', undefined);

  expect(await removeStaleReplicas(ADMIN_URL, dir)).toEqual([ofDeadRun]);
  expect(existsSync(ofDeadRun)).toBe(false);
  expect(existsSync(ofThisRun)).toBe(true);
  expect(existsSync(beingMade)).toBe(true);
});

const unsupported = replicaUnsupported();
if (unsupported)
  process.stderr.write(`\nstale replica removal not tested on a replica: ${unsupported}\n`);
const describeReplica = unsupported ? describe.skip : describe;

describeReplica('a real replica of a run that died', () => {
  let cluster: ReplicaCluster | undefined;

  afterAll(async () => {
    if (cluster && existsSync(cluster.home)) await removeReplica(cluster, ADMIN_URL);
  });

  const answers = async (port: number) => {
    const client = new pg.Client({
      connectionString: replicaUrl({ port } as ReplicaCluster, 'postgres'),
    });
    client.on('error', () => {});
    try {
      await client.connect();
      const { rows } = await client.query<{ replica: boolean }>(
        'SELECT pg_is_in_recovery() AS replica',
      );
      return rows[0]!.replica;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => {});
    }
  };
  const slotExists = async (slot: string) => {
    const client = new pg.Client({ connectionString: ADMIN_URL });
    await client.connect();
    try {
      const { rows } = await client.query(
        'SELECT 1 FROM pg_replication_slots WHERE slot_name = $1',
        [slot],
      );
      return rows.length > 0;
    } finally {
      await client.end();
    }
  };

  test('is stopped, its slot dropped and its directory deleted; not while the run lives', async () => {
    const run = standInRun();
    cluster = await createStreamingReplica(ADMIN_URL, run.owner);
    expect(await answers(cluster.port)).toBe(true);

    // The run lives (as concurrent runs of other checkouts do): nothing of it is touched.
    expect(await removeStaleReplicas(ADMIN_URL)).not.toContain(cluster.home);
    expect(await answers(cluster.port)).toBe(true);
    expect(await slotExists(cluster.slot)).toBe(true);

    await run.kill();
    expect(await removeStaleReplicas(ADMIN_URL)).toContain(cluster.home);
    expect(await answers(cluster.port)).toBe(false);
    expect(await slotExists(cluster.slot)).toBe(false);
    expect(existsSync(cluster.home)).toBe(false);
  }, 660_000);
});
