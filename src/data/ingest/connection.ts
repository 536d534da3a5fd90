import pg from 'pg';
import { SESSION_OPTIONS } from '../../shared/db/sessionSettings.ts';

/** application_name of a load's dedicated connection (what `pg_stat_activity` shows). */
export const INGEST_APPLICATION_NAME = 'platform-ingest';

export interface Connection {
  client: pg.ClientBase;
  /** Gives the connection back; pass the error when it may be unusable. */
  release(error?: Error): Promise<void>;
}

export type Connect = () => Promise<Connection>;

/**
 * A connection of its own for each unit: a long COPY must not hold one of the shared pool's few
 * connections (graphile-worker needs them to fetch and complete jobs), and a killed load must take
 * only its own session down.
 */
export function dedicatedConnection(url: string): Connect {
  return async () => {
    const client = new pg.Client({
      connectionString: url,
      application_name: INGEST_APPLICATION_NAME,
      // A load killed mid-statement (SIGKILL in its merge) must not leave that statement running.
      options: SESSION_OPTIONS,
    });
    client.on('error', () => {});
    await client.connect();
    return { client, release: () => client.end().catch(() => {}) };
  };
}

/**
 * One connection kept for a sequence of units loaded one after the other (a worker's archives):
 * a new session per unit pays the server's process start and its catalog caches (the
 * hypertable's chunks) every time. A unit that fails with an error it passes to `release` drops
 * the connection, and the next unit opens another. `close` ends the kept one.
 */
export function keptConnection(connect: Connect): { connect: Connect; close(): Promise<void> } {
  let kept: Connection | null = null;
  return {
    connect: async () => {
      const connection = kept ?? (await connect());
      kept = null;
      return {
        client: connection.client,
        release: async (error?: Error) => {
          if (error) await connection.release(error);
          else kept = connection;
        },
      };
    },
    close: async () => {
      const connection = kept;
      kept = null;
      await connection?.release();
    },
  };
}

/** A connection borrowed from a pool (short loads such as the bulk HTTP route). */
export function pooledConnection(pool: pg.Pool): Connect {
  return async () => {
    const client = await pool.connect();
    return {
      client,
      release: async (error?: Error) => client.release(error ?? false),
    };
  };
}

export async function knownCurrencyCodes(client: pg.ClientBase): Promise<Set<string>> {
  const result = await client.query<{ code: string }>('SELECT code FROM currencies');
  return new Set(result.rows.map((r) => r.code));
}
