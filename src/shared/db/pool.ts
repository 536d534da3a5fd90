import { createPgDriverFactory } from '@slonik/pg-driver';
import pg from 'pg';
import {
  ConnectionError,
  createPool,
  type DriverFactory,
  SchemaValidationError,
  type DatabasePool,
  type DriverTypeParser,
  type Interceptor,
  type QueryResultRow,
} from 'slonik';

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
 * The pg driver with a client-side deadline on every query. The server-side statement timeout
 * cannot fire when the server is unreachable (a half-open connection: a dead peer or a network
 * that drops packets), and TCP may take many minutes to notice; past the deadline the query
 * fails with a ConnectionError (503) and its connection is destroyed, never reused.
 */
function driverWithQueryDeadline(deadlineMs: number): DriverFactory {
  const inner = createPgDriverFactory();
  return async (setup) => {
    const driver = await inner(setup);
    return {
      createClient: async () => {
        const client = await driver.createClient();
        const query = client.query;
        client.query = (text, values, queryOptions) => {
          let timer: NodeJS.Timeout | undefined;
          const deadline = new Promise<never>((_, reject) => {
            timer = setTimeout(() => {
              void client.destroy().catch(() => {});
              reject(new ConnectionError(`The database did not answer within ${deadlineMs} ms.`));
            }, deadlineMs);
          });
          return Promise.race([query(text, values, queryOptions), deadline]).finally(() =>
            clearTimeout(timer),
          );
        };
        return client;
      },
    };
  };
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
  const pool = await createPool(url, {
    driverFactory: driverWithQueryDeadline(statementTimeout + 1000),
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
  return pool;
}

/** A plain node-postgres pool, for COPY streams and LISTEN, which Slonik does not offer. */
export function createPgPool(url: string, max = 4, connectionTimeoutMs = 5_000): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: connectionTimeoutMs,
    keepAlive: true,
  });
  // A client losing its connection (database restart) must not crash the process: the pool
  // discards it and the next checkout reconnects.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}
