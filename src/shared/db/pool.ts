import pg from 'pg';
import {
  createPool,
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
  return createPool(url, {
    interceptors: [resultParser, ...(options.interceptors ?? [])],
    typeParsers,
    maxPoolSize: options.maxPoolSize ?? 10,
    statementTimeout: options.statementTimeoutMs ?? 30_000,
    connectionTimeout: options.connectionTimeoutMs ?? 5_000,
    idleTimeout: 10_000,
    // No session state is ever changed on pooled connections, so skip the DISCARD ALL round trip.
    resetConnection: async () => {},
  });
}

/** A plain node-postgres pool, for COPY streams and LISTEN, which Slonik does not offer. */
export function createPgPool(url: string, max = 4): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, connectionTimeoutMillis: 5_000 });
  // A client losing its connection (database restart) must not crash the process: the pool
  // discards it and the next checkout reconnects.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}
