import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_URL } from './database.ts';
import { claimRunOwnership } from './replicaOwner.ts';
import { dropLeftoverSlots, removeStaleReplicas } from './staleReplicas.ts';
import {
  createStreamingReplica,
  removeReplica,
  replicaUnsupported,
  type ReplicaCluster,
} from './streamingReplica.ts';
import { eventually } from './wait.ts';

// The test run's streaming replica, made by the first test that asks for it and shared by the
// others (jest runs files in several processes: the first one to take the lock makes it, the
// others wait for its address); the global teardown removes it. Runs without a replica test
// never pay for it.

/** Where the run keeps its replica's state (set by the global setup). */
const STATE_ENV = 'TEST_REPLICA_STATE_DIR';

/**
 * Global setup: where this run's replica will be noted, and this process as its owner; the
 * replicas and slots of runs that died without their teardown are removed.
 */
export async function prepareReplicaState(dir: string) {
  process.env[STATE_ENV] = dir;
  claimRunOwnership();
  if (replicaUnsupported()) return;
  for (const home of await removeStaleReplicas(ADMIN_URL)) {
    process.stderr.write(`\nglobal setup: removed ${home}, the replica of a test run that died\n`);
  }
  await dropLeftoverSlots(ADMIN_URL);
}

function stateDir(): string {
  const dir = process.env[STATE_ENV];
  if (!dir) throw new Error(`${STATE_ENV} is unset: run the tests through jest's global setup`);
  return dir;
}

const clusterFile = (dir: string) => join(dir, 'replica.json');
const failureFile = (dir: string) => join(dir, 'failed.txt');

/** The run's replica, made on first use; throws when it could not be made. */
export async function testReplica(): Promise<ReplicaCluster> {
  const dir = stateDir();
  let maker = false;
  try {
    mkdirSync(join(dir, 'lock'));
    maker = true;
  } catch {
    // Another test process makes it.
  }
  if (maker) {
    try {
      const cluster = await createStreamingReplica(ADMIN_URL);
      writeFileSync(clusterFile(dir), JSON.stringify(cluster));
    } catch (error) {
      writeFileSync(failureFile(dir), String((error as Error).stack ?? error));
      throw error;
    }
  }
  await eventually(
    () => existsSync(clusterFile(dir)) || existsSync(failureFile(dir)),
    600_000,
    'the test replica',
  );
  if (existsSync(failureFile(dir))) {
    throw new Error(
      `the test replica could not be made:\n${readFileSync(failureFile(dir), 'utf8')}`,
    );
  }
  return JSON.parse(readFileSync(clusterFile(dir), 'utf8')) as ReplicaCluster;
}

/** A database's URL on the replica. */
export function replicaUrl(cluster: ReplicaCluster, database: string): string {
  const url = new URL(ADMIN_URL);
  url.port = String(cluster.port);
  url.pathname = `/${database}`;
  return url.toString();
}

/** Global teardown: removes the run's replica, if a test made one. */
export async function removeTestReplica() {
  const dir = process.env[STATE_ENV];
  if (!dir) return;
  if (existsSync(clusterFile(dir))) {
    const cluster = JSON.parse(readFileSync(clusterFile(dir), 'utf8')) as ReplicaCluster;
    await removeReplica(cluster, ADMIN_URL);
  }
  rmSync(dir, { recursive: true, force: true });
}

export { replicaUnsupported };
