import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { readTimescaleState } from '../../shared/db/timescale.ts';
import { LEVEL_RELATIONS } from './levels.ts';

// History is read one currency at a time over a time range, but every write path writes all
// currencies of the same time together: the harvest each minute, the rollup refresh each
// minute. In a chunk so written, a currency's rows sit one or two to a heap page among the
// other currencies', and a year of its minutes or 5-minute rows reads as many pages as it has
// rows (50 currencies, first requests: a year at 55 min 188 → 44 ms p50 once in currency order,
// 7 min over 48 days 162 → 37 ms; bench/RESULTS.md). So once a chunk is closed (only a
// backfill writes there any more), its rows are put in the order of its (currency_code, time)
// index, as TimescaleDB's reorder policy does: reorder_chunk in the Timescale edition, which lets
// reads go on meanwhile; CLUSTER in the Apache edition, which locks the chunk for the time it
// takes (0.5–1.1 s a chunk for 50 currencies). While it waits for that lock, readers arriving
// queue behind it, so it waits briefly (lockTimeoutMs) and leaves a chunk still being read to the
// next run rather than hold every reader back behind a long statement. Each chunk once
// (chunk_reorders, sql/0290_chunk_reorders.sql): later backfills append one currency's rows at
// a time, which stay together.

/** A chunk is closed this long after its time range ended: only backfills write there then. */
const CLOSED_AFTER = sql.fragment`interval '1 day'`;
/** Chunks reordered per run by default: each rewrites tens of megabytes. */
export const CHUNKS_PER_RUN = 6;
/** PostgreSQL's error when a lock is not granted within lock_timeout. */
const LOCK_NOT_AVAILABLE = '55P03';

export interface ReorderOptions {
  /** Chunks reordered per call at most (default CHUNKS_PER_RUN). */
  maxChunks?: number;
  /** How long to wait for a chunk's lock before leaving it to the next call (default 100 ms). */
  lockTimeoutMs?: number;
}

export interface ReorderResult {
  /** Chunks put in (currency_code, time) order, as schema-qualified names. */
  reordered: string[];
  /** Chunks whose lock was busy: left to the next call. */
  busy: string[];
}

/** A chunk as its schema-qualified name (quoted where needed), its parts, and its index's name. */
const candidateRow = z.object({
  chunk: z.string(),
  schema: z.string(),
  name: z.string(),
  index: z.string(),
});
type Candidate = z.infer<typeof candidateRow>;

/** Puts the rows of closed chunks not reordered yet into (currency_code, time) order. */
export async function reorderClosedChunks(
  pool: DatabasePool,
  options: ReorderOptions = {},
): Promise<ReorderResult> {
  // reorder_chunk is Timescale's own (TSL); the Apache edition has CLUSTER only.
  const tsl = (await readTimescaleState(pool)).edition === 'timescale';
  const candidates = await pool.any(candidatesQuery(options.maxChunks ?? CHUNKS_PER_RUN));
  const result: ReorderResult = { reordered: [], busy: [] };
  for (const candidate of candidates) {
    const done = await reorderChunk(pool, candidate, tsl, options.lockTimeoutMs ?? 100);
    (done ? result.reordered : result.busy).push(candidate.chunk);
  }
  return result;
}

/**
 * Closed chunks of the raw table and of every rollup level (their tables, or the continuous
 * aggregates' materialisation hypertables) not reordered yet, the most recent first (the most
 * read), each with its index on (currency_code, time dimension).
 */
const CANDIDATES = sql.fragment`
    WITH targets AS (
      SELECT hypertable_schema AS schema, hypertable_name AS name
      FROM timescaledb_information.hypertables
      WHERE hypertable_schema = current_schema()
        AND hypertable_name = ANY(${sql.array(['price_observations', ...LEVEL_RELATIONS], 'text')})
      UNION ALL
      SELECT materialization_hypertable_schema, materialization_hypertable_name
      FROM timescaledb_information.continuous_aggregates
      WHERE view_schema = current_schema() AND view_name = ANY(${sql.array([...LEVEL_RELATIONS], 'text')})
    ),
    closed AS (
      SELECT format('%I.%I', c.chunk_schema, c.chunk_name) AS chunk, c.chunk_schema AS schema,
             c.chunk_name AS name, c.primary_dimension, c.range_end
      FROM targets t
      JOIN timescaledb_information.chunks c
        ON c.hypertable_schema = t.schema AND c.hypertable_name = t.name
      -- A compressed chunk (Timescale edition) is already stored by segment, and cannot be.
      WHERE c.range_end <= now() - ${CLOSED_AFTER} AND NOT c.is_compressed
    )
    SELECT s.chunk, s.schema, s.name, ordering.index
    FROM closed s
    CROSS JOIN LATERAL (
      SELECT x.relname AS index
      FROM pg_index i
      JOIN pg_class x ON x.oid = i.indexrelid
      JOIN pg_attribute first ON first.attrelid = i.indrelid AND first.attnum = i.indkey[0]
      JOIN pg_attribute second ON second.attrelid = i.indrelid AND second.attnum = i.indkey[1]
      WHERE i.indrelid = s.chunk::regclass AND i.indnkeyatts >= 2
        AND first.attname = 'currency_code' AND second.attname = s.primary_dimension
      ORDER BY i.indisprimary DESC, x.relname
      LIMIT 1
    ) AS ordering
    WHERE NOT EXISTS (SELECT FROM chunk_reorders r WHERE r.chunk = s.chunk)
    ORDER BY s.range_end DESC`;

/** The first `limit` candidates. */
function candidatesQuery(limit: number) {
  return sql.type(candidateRow)`${CANDIDATES} LIMIT ${limit}`;
}

const backlogRow = z.object({ waiting: z.number(), lastReorderedAt: z.date().nullable() });
export type ReorderBacklog = z.infer<typeof backlogRow>;

/** Closed chunks still in write order, and when the job last reordered one (platform doctor). */
export async function readReorderBacklog(pool: DatabasePool): Promise<ReorderBacklog> {
  return pool.one(sql.type(backlogRow)`
    SELECT (SELECT count(*)::int FROM (${CANDIDATES}) AS candidates) AS waiting,
           (SELECT max(reordered_at) FROM chunk_reorders) AS "lastReorderedAt"`);
}

/** Reorders one chunk and records it; false when its lock stayed busy past the timeout. */
async function reorderChunk(
  pool: DatabasePool,
  { chunk, schema, name, index }: Candidate,
  tsl: boolean,
  lockTimeoutMs: number,
): Promise<boolean> {
  // Two workers may reorder the same chunk at once (the second waits, then rewrites it again).
  const record = sql.unsafe`INSERT INTO chunk_reorders (chunk) VALUES (${chunk}) ON CONFLICT DO NOTHING`;
  // The planner costs an index scan by the correlation of the heap's order with the index's;
  // left at the old order's statistics it read one currency's minutes of a reordered chunk
  // through the time index, every currency's rows filtered (a year at 61 min: 1.1 → 2.2 s,
  // 86 ms once analysed).
  const analyze = sql.unsafe`ANALYZE ${sql.identifier([schema, name])}`;
  try {
    await pool.connect(async (connection) => {
      await connection.query(
        sql.unsafe`SELECT set_config('lock_timeout', ${`${lockTimeoutMs}ms`}, false)`,
      );
      try {
        if (tsl) {
          // Outside a transaction block: reorder_chunk takes its locks step by step.
          await connection.query(
            sql.unsafe`SELECT reorder_chunk(${chunk}::regclass,
                                            format('%I.%I', ${schema}::text, ${index}::text)::regclass)`,
          );
          await connection.query(analyze);
          await connection.query(record);
        } else {
          await connection.transaction(async (tx) => {
            await tx.query(
              sql.unsafe`CLUSTER ${sql.identifier([schema, name])} USING ${sql.identifier([index])}`,
            );
            await tx.query(record);
          });
          // After the commit, so the chunk's lock is held only while it is rewritten.
          await connection.query(analyze);
        }
      } finally {
        await connection.query(sql.unsafe`RESET lock_timeout`);
      }
    });
    return true;
  } catch (error) {
    if (sqlState(error) === LOCK_NOT_AVAILABLE) return false;
    throw error;
  }
}

function sqlState(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: string } }).cause;
  return cause?.code ?? (error as { code?: string }).code;
}
