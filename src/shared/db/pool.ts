import { createPgDriverFactory } from '@slonik/pg-driver';
import { finished } from 'node:stream';
import pg from 'pg';
import {
  ConnectionError,
  createPool,
  type DriverClient,
  type DriverFactory,
  SchemaValidationError,
  type DatabasePool,
  type DriverTypeParser,
  type Interceptor,
  type QueryResultRow,
} from 'slonik';

import { abandonmentSignal, RequestAbandonedError } from '../abandonment.ts';
import { SESSION_OPTIONS, SESSION_SETTINGS } from './sessionSettings.ts';

export type { DatabasePool };

/** Validates every row against the zod schema given with `sql.type(schema)`. */
const resultParser: Interceptor = {
  name: 'result-parser',
  transformRow: (context, query, row) => {
    if (!context.resultParser) return row;
    const result = context.resultParser['~standard'].validate(row);
    if (result instanceof Promise) throw new TypeError('async row schemas are not supported');
    if (result.issues) throw new SchemaValidationError(query, row, result.issues);
    return result.value as QueryResultRow;
  },
};

// Row values as the code wants them: ids and counts as numbers, instants as Date.
const typeParsers: DriverTypeParser[] = [
  { name: 'int8', parse: (v) => Number(v) },
  { name: 'numeric', parse: (v) => Number(v) },
  { name: 'float8', parse: (v) => Number(v) },
  { name: 'timestamptz', parse: (v) => new Date(v) },
  { name: 'timestamp', parse: (v) => new Date(`${v}Z`) },
  { name: 'date', parse: (v) => v },
];

/**
 * Applies the platform's session settings (sessionSettings.ts) once per pooled session, when it
 * connects: Slonik's driver builds its connection from the URL alone, without startup options.
 */
const SESSION_SETUP = `SELECT pg_backend_pid() AS pid, ${Object.entries(SESSION_SETTINGS)
  .map(
    ([name, value]) => `set_config(${pg.escapeLiteral(name)}, ${pg.escapeLiteral(value)}, false)`,
  )
  .join(', ')}`;

/**
 * The pg driver with a client-side deadline on every query and cancellation of abandoned work.
 * The server-side statement timeout cannot fire when the server is unreachable (a half-open
 * connection: a dead peer or a network that drops packets), and TCP may take many minutes to
 * notice; past the deadline the query fails with a ConnectionError (503) and its connection is
 * destroyed, never reused. A query or stream started for a request that is then abandoned (see
 * shared/abandonment.ts) has its backend cancelled and its connection destroyed, so that a late
 * cancel can never hit another request's query on a reused connection.
 */
function driverWithQueryDeadline(deadlineMs: number, canceller: BackendCanceller): DriverFactory {
  const inner = createPgDriverFactory();
  return async (setup) => {
    const driver = await inner(setup);
    return {
      createClient: async () => {
        const client = await driver.createClient();
        const pid = await setUpSession(client);
        const abandon = () => {
          canceller.cancel(pid);
          void client.destroy().catch(() => {});
        };
        const query = client.query;
        client.query = (text, values, queryOptions) => {
          const signal = abandonmentSignal();
          if (signal?.aborted) return Promise.reject(new RequestAbandonedError());
          signal?.addEventListener('abort', abandon);
          let timer: NodeJS.Timeout | undefined;
          const deadline = new Promise<never>((_, reject) => {
            timer = setTimeout(() => {
              void client.destroy().catch(() => {});
              reject(new ConnectionError(`The database did not answer within ${deadlineMs} ms.`));
            }, deadlineMs);
          });
          return Promise.race([query(text, values, queryOptions), deadline]).finally(() => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', abandon);
          });
        };
        const stream = client.stream;
        client.stream = (text, values) => {
          const signal = abandonmentSignal();
          const rows = stream(text, values);
          if (!signal) return rows;
          if (signal.aborted) {
            queueMicrotask(abandon);
            return rows;
          }
          signal.addEventListener('abort', abandon);
          finished(rows as unknown as NodeJS.ReadableStream, () =>
            signal.removeEventListener('abort', abandon),
          );
          return rows;
        };
        return client;
      },
    };
  };
}

async function setUpSession(client: DriverClient): Promise<number> {
  client.acquire();
  try {
    const result = await client.query(SESSION_SETUP, []);
    return Number(result.rows[0]!.pid);
  } finally {
    await client.release();
  }
}

/**
 * Sends pg_cancel_backend over a small pool of its own: cancelling must not wait behind the
 * very queries it cancels.
 */
class BackendCanceller {
  private pool: pg.Pool | undefined;
  private readonly url: string;
  constructor(url: string) {
    this.url = url;
  }

  cancel(pid: number) {
    this.pool ??= createPgPool(this.url, 2);
    this.pool.query('SELECT pg_cancel_backend($1)', [pid]).catch(() => {
      // The destroyed connection ends the query anyway (client_connection_check_interval).
    });
  }

  async end() {
    await this.pool?.end();
  }
}

export interface PoolOptions {
  maxPoolSize?: number;
  statementTimeoutMs?: number;
  connectionTimeoutMs?: number;
  /** Extra interceptors after the row validator (instrumentation, tests). */
  interceptors?: Interceptor[];
}

export async function createDatabasePool(
  url: string,
  options: PoolOptions = {},
): Promise<DatabasePool> {
  const statementTimeout = options.statementTimeoutMs ?? 30_000;
  const canceller = new BackendCanceller(url);
  const pool = await createPool(url, {
    driverFactory: driverWithQueryDeadline(statementTimeout + 1000, canceller),
    // A connection being destroyed (past its deadline) holds its pool slot at most this long.
    gracefulTerminationTimeout: 1000,
    interceptors: [resultParser, ...(options.interceptors ?? [])],
    typeParsers,
    maxPoolSize: options.maxPoolSize ?? 10,
    statementTimeout,
    connectionTimeout: options.connectionTimeoutMs ?? 5_000,
    idleTimeout: 10_000,
    // No session state is ever changed on pooled connections, so skip the DISCARD ALL round trip.
    resetConnection: async () => {},
  });
  // Slonik also emits every query error on the pool; with no listener, EventEmitter would turn
  // it into a plain "Unhandled error" that hides the typed error (a 503 would become a 500). The
  // error still rejects the query, where it is handled.
  pool.on('error', () => {});
  const end = pool.end.bind(pool);
  return Object.assign(pool, {
    end: async () => {
      await end();
      await canceller.end();
    },
  });
}

/** A plain node-postgres pool, for COPY streams and LISTEN, which Slonik does not offer. */
export function createPgPool(url: string, max = 4, connectionTimeoutMs = 5_000): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: connectionTimeoutMs,
    keepAlive: true,
    options: SESSION_OPTIONS,
  });
  // A client losing its connection (database restart) must not crash the process: the pool
  // discards it and the next checkout reconnects.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}
