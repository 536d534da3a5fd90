import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { LEVEL_RELATIONS } from '../../src/data/history/levels.ts';

// In production the worker's refresh writes each level a few buckets at a time, every currency of
// a bucket together (write order); the benchmark's catch-up writes weeks at a time, one currency
// after another, which would leave the newest chunk of each level in currency order and make its
// reads look cheaper than production's. So after a catch-up from scratch every level's chunk is
// rewritten in write order (by bucket, then currency), once; reorder_chunks then puts the closed
// ones in currency order, as it does in production, and the open ones stay as written.

const chunkRow = z.object({ schema: z.string(), name: z.string() });

/** Rewrites every chunk of the rollup tables in write order; returns how many. */
export async function layOutLevelsAsWritten(pool: DatabasePool): Promise<number> {
  const chunks = await pool.any(sql.type(chunkRow)`
    SELECT chunk_schema AS schema, chunk_name AS name FROM timescaledb_information.chunks
    WHERE hypertable_name = ANY(${sql.array([...LEVEL_RELATIONS], 'text')})`);
  for (const { schema, name } of chunks) {
    const chunk = sql.identifier([schema, name]);
    const index = `${name}_write_order`;
    await pool.query(
      sql.unsafe`CREATE INDEX ${sql.identifier([index])} ON ${chunk} (bucket, currency_code)`,
    );
    await pool.query(sql.unsafe`CLUSTER ${chunk} USING ${sql.identifier([index])}`);
    await pool.query(sql.unsafe`DROP INDEX ${sql.identifier([schema, index])}`);
    await pool.query(sql.unsafe`ANALYZE ${chunk}`);
  }
  return chunks.length;
}
