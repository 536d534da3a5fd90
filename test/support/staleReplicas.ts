import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ownerAlive, slotOwner } from './replicaOwner.ts';
import {
  dropSlot,
  HOME_PREFIX,
  ownerFile,
  SLOT_PREFIX,
  stopReplica,
  type ReplicaRecord,
} from './streamingReplica.ts';
import { eventually } from './wait.ts';

// A killed test run leaves its replica behind: the replica's postgres (started by pg_ctl, so no
// child of jest) keeps running and streaming, and its slot keeps WAL on the shared server. The
// global setup of the next run, of any checkout, removes what belongs to dead runs, and only
// that: runs going on at the same time keep their replicas, however their tests use them.

/**
 * Stops the replicas in `dir` whose run is gone, drops their slots and deletes their
 * directories; returns the directories removed. A directory without a readable owner.json (being
 * made right now, or made by an older checkout) is left alone.
 */
export async function removeStaleReplicas(adminUrl: string, dir = tmpdir()): Promise<string[]> {
  const removed: string[] = [];
  for (const name of readdirSync(dir)) {
    if (!name.startsWith(HOME_PREFIX)) continue;
    const home = join(dir, name);
    const record = readRecord(home);
    if (!record || ownerAlive(record.owner)) continue;
    try {
      await stopReplica(record);
      await dropReleasedSlot(adminUrl, record.slot);
    } catch (error) {
      // Kept for the next run to try again; this run goes on without it.
      process.stderr.write(
        `\nthe stale test replica ${home} could not be removed: ${String(error)}\n`,
      );
      continue;
    }
    rmSync(home, { recursive: true, force: true });
    removed.push(home);
  }
  return removed;
}

function readRecord(home: string): ReplicaRecord | undefined {
  try {
    return JSON.parse(readFileSync(ownerFile(home), 'utf8')) as ReplicaRecord;
  } catch {
    return undefined;
  }
}

/** Drops a stopped replica's slot once the primary has let go of its connection. */
async function dropReleasedSlot(adminUrl: string, slot: string) {
  await eventually(
    async () => !(await slotActive(adminUrl, slot)),
    60_000,
    `slot ${slot} released`,
  );
  await dropSlot(adminUrl, slot);
}

async function slotActive(adminUrl: string, slot: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query(
      'SELECT 1 FROM pg_replication_slots WHERE slot_name = $1 AND active',
      [slot],
    );
    return rows.length > 0;
  } finally {
    await client.end();
  }
}

/**
 * Drops the inactive slots of dead runs whose replica directory is gone (deleted, or the run was
 * killed while making it). A slot of the older form (`<port>_<pid of a jest worker>`) says no
 * more than that pid: it goes once inactive and that process is gone.
 */
export async function dropLeftoverSlots(adminUrl: string) {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ slot_name: string }>(
      `SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE $1 AND NOT active`,
      [`${SLOT_PREFIX}%`],
    );
    for (const { slot_name: slot } of rows) {
      const owner = slotOwner(SLOT_PREFIX, slot) ?? olderSlotOwner(slot);
      if (!owner || ownerAlive(owner)) continue;
      await client.query(
        'SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active',
        [slot],
      );
    }
  } finally {
    await client.end();
  }
}

function olderSlotOwner(slot: string) {
  const match = new RegExp(`^${SLOT_PREFIX}\\d+_(\\d+)$`).exec(slot);
  return match ? { pid: Number(match[1]), started: null } : undefined;
}
