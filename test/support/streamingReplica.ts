import { execFile } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { hostFacts } from '../../src/shared/provision.ts';
import { ownedSlotName, runOwner, type RunOwner } from './replicaOwner.ts';

// A physical streaming replica of the test server on this machine, made the way an operator
// makes one: pg_basebackup -R from the primary into a fresh data directory, started as its own
// cluster on a free port (as root on Debian, where the server's binaries and the postgres user
// are known). The primary is never restarted: at most a `host replication` line is added to its
// pg_hba.conf and the configuration reloaded. Each replica lives in a directory of its own
// (platform-test-replica-*) whose owner.json, written before anything else, names the test run
// it belongs to: a later run stops and removes it if that run died (staleReplicas.ts).

const run = promisify(execFile);

export interface ReplicaCluster {
  port: number;
  /** The replica's own directory: owner.json and the data directory. */
  home: string;
  dataDir: string;
  binDir: string;
  /** The physical replication slot on the primary that keeps the WAL the replica still needs. */
  slot: string;
}

/** Prefix of the replicas' slots: a run drops those of dead runs (staleReplicas.ts). */
export const SLOT_PREFIX = 'platform_test_replica_';
/** Prefix of the replicas' directories in the temporary directory. */
export const HOME_PREFIX = 'platform-test-replica-';

/** What owner.json says: whose replica it is, and what stopping and removing it takes. */
export interface ReplicaRecord {
  owner: RunOwner;
  slot: string;
  binDir: string;
  dataDir: string;
}

export const ownerFile = (home: string) => join(home, 'owner.json');

/** Why no replica can be made here, or undefined when one can. */
export function replicaUnsupported(): string | undefined {
  const host = hostFacts();
  if (host.root && host.debian) return undefined;
  return (
    'a streaming replica of the test server needs root on Debian (pg_basebackup into a ' +
    'temporary cluster run as the postgres user); the replica tests are skipped here'
  );
}

/**
 * Makes and starts a replica of the server behind `adminUrl` (its `postgres` database), owned by
 * `owner` (the test run, by default).
 */
export async function createStreamingReplica(
  adminUrl: string,
  owner: RunOwner = runOwner(),
): Promise<ReplicaCluster> {
  const primary = new URL(adminUrl);
  const settings = await primarySettings(adminUrl);
  const port = await freePort();
  const home = mkdtempSync(join(tmpdir(), HOME_PREFIX));
  chmodSync(home, 0o711); // the postgres user reaches its data directory inside
  const dataDir = join(home, 'data');
  const slot = ownedSlotName(SLOT_PREFIX, owner, port);
  const record: ReplicaRecord = { owner, slot, binDir: settings.binDir, dataDir };
  writeFileSync(ownerFile(home), JSON.stringify(record));
  const [uid, gid] = await postgresIds();
  mkdirSync(dataDir, { mode: 0o700 });
  chownSync(dataDir, uid, gid);
  try {
    await baseBackup(settings.binDir, primary, dataDir, slot, adminUrl);
  } catch (error) {
    rmSync(home, { recursive: true, force: true });
    await dropSlot(adminUrl, slot);
    throw error;
  }
  writeFileSync(join(dataDir, 'postgresql.conf'), replicaConf(port, dataDir, settings.copied));
  writeFileSync(
    join(dataDir, 'pg_hba.conf'),
    'local all all trust\nhost all all 127.0.0.1/32 trust\n',
  );
  for (const file of ['postgresql.conf', 'pg_hba.conf']) {
    chownSync(join(dataDir, file), uid, gid);
  }
  const cluster = { port, home, dataDir, binDir: settings.binDir, slot };
  await startReplica(cluster);
  return cluster;
}

/**
 * pg_basebackup -R into a new permanent slot (the primary keeps the WAL the replica has not
 * received yet, however busy the shared server is). Tried again when the copy is cut short: a
 * pg_hba.conf just reloaded and not in force yet, a connection ended by the busy server.
 */
async function baseBackup(
  binDir: string,
  primary: URL,
  dataDir: string,
  slot: string,
  adminUrl: string,
) {
  for (let attempt = 1; ; attempt++) {
    try {
      await createSlot(adminUrl, slot);
      await asPostgres(join(binDir, 'pg_basebackup'), [
        ...['-h', primary.hostname, '-p', primary.port || '5432', '-U', primary.username],
        ...['-D', dataDir, '-R', '-X', 'stream', '-S', slot, '-c', 'fast', '--no-sync'],
      ]);
      return;
    } catch (error) {
      if (attempt >= 4) throw error;
      await dropSlot(adminUrl, slot);
      rmSync(dataDir, { recursive: true, force: true });
      mkdirSync(dataDir, { mode: 0o700 });
      chownSync(dataDir, ...(await postgresIds()));
    }
  }
}

async function postgresIds(): Promise<[number, number]> {
  const ids = await Promise.all(
    ['-u', '-g'].map((flag) => run('id', [flag, 'postgres']).then((r) => Number(r.stdout.trim()))),
  );
  return [ids[0]!, ids[1]!];
}

/**
 * Creates the slot with its WAL reserved at once, before the copy starts: a slot pg_basebackup
 * creates itself (-C) was seen invalidated by the copy's own checkpoint on a busy server.
 */
async function createSlot(adminUrl: string, slot: string) {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query('SELECT pg_create_physical_replication_slot($1, true)', [slot]);
  } finally {
    await client.end();
  }
}

/** Drops the slot of a replica (once it is stopped), so the primary keeps no WAL for it. */
export async function dropSlot(adminUrl: string, slot: string) {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(
      'SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active',
      [slot],
    );
  } finally {
    await client.end();
  }
}

export async function startReplica(cluster: ReplicaCluster): Promise<void> {
  await asPostgres(join(cluster.binDir, 'pg_ctl'), [
    ...['-D', cluster.dataDir, '-l', join(cluster.dataDir, 'server.log')],
    ...['-w', '-t', '300', 'start'],
  ]);
}

export async function stopReplica(cluster: Pick<ReplicaCluster, 'binDir' | 'dataDir'>) {
  await asPostgres(join(cluster.binDir, 'pg_ctl'), [
    ...['-D', cluster.dataDir, '-m', 'fast', '-w', '-t', '120', 'stop'],
  ]).catch(() => {});
}

/** Stops the replica, drops its slot on the primary and deletes its directory. */
export async function removeReplica(cluster: ReplicaCluster, adminUrl: string): Promise<void> {
  await stopReplica(cluster);
  await dropSlot(adminUrl, cluster.slot);
  rmSync(cluster.home, { recursive: true, force: true });
}

/**
 * The primary's binaries, and the settings a hot standby must have at least as high as its
 * primary's. Adds the replication line to pg_hba.conf when none lets 127.0.0.1 replicate.
 */
async function primarySettings(adminUrl: string) {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string; setting: string }>(`
      SELECT name, setting FROM pg_settings
      WHERE name IN ('wal_level', 'max_wal_senders', 'hba_file', 'shared_preload_libraries',
                     'max_connections', 'max_worker_processes', 'max_prepared_transactions',
                     'max_locks_per_transaction')
      UNION ALL SELECT 'bindir', setting FROM pg_config WHERE name = 'BINDIR'`);
    const setting = Object.fromEntries(rows.map((row) => [row.name, row.setting]));
    if (setting.wal_level === 'minimal' || Number(setting.max_wal_senders) < 1) {
      throw new Error('the test server cannot stream WAL (wal_level minimal or max_wal_senders 0)');
    }
    const { rows: rules } = await client.query(`
      SELECT 1 FROM pg_hba_file_rules
      WHERE 'replication' = ANY(database) AND type = 'host'
        AND (address IN ('127.0.0.1', 'all', 'samehost') OR address = '0.0.0.0' AND netmask = '0.0.0.0')`);
    if (rules.length === 0) {
      appendFileSync(
        setting.hba_file!,
        '\n# Streaming replicas of the test setup (test/support/streamingReplica.ts)\n' +
          'host replication all 127.0.0.1/32 trust\n',
      );
      await client.query('SELECT pg_reload_conf()');
    }
    const { wal_level: _, max_wal_senders: __, hba_file: ___, bindir, ...copied } = setting;
    return { binDir: bindir!, copied };
  } finally {
    await client.end();
  }
}

function replicaConf(port: number, dataDir: string, copied: Record<string, string>): string {
  const lines = {
    port: String(port),
    listen_addresses: "'127.0.0.1'",
    unix_socket_directories: `'${dataDir}'`,
    hot_standby: 'on',
    // A throw-away copy: durability buys nothing here and costs the loaded machine.
    fsync: 'off',
    ...Object.fromEntries(Object.entries(copied).map(([k, v]) => [k, `'${v}'`])),
  };
  return Object.entries(lines)
    .map(([key, value]) => `${key} = ${value}\n`)
    .join('');
}

async function asPostgres(command: string, args: string[]) {
  await run('runuser', ['-u', 'postgres', '--', command, ...args], {
    maxBuffer: 16 * 1024 * 1024,
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
