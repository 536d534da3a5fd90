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
