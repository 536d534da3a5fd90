import { sql, type SqlToken as SqlFragment } from 'slonik';
import { stampsOnWholeSeconds, type GridSpec } from '../../shared/time/bucketGrid.ts';

// The bytes of a JSON answer: how PostgreSQL writes each bucket as an item of the body. Runs kept
// between requests (runCache.ts) are these bytes, so anything that changes them must move
// FORMAT_VERSION: every kept run is keyed by it. Nothing formatted is kept in the database: the
// texts the worker once rendered into history_run_texts gained no CPU per request beyond this
// machine's noise (bench/RESULTS.md) and were dropped (sql/0230_drop_history_run_texts.sql).

/**
 * The version of the answer format and of the bucket rule the kept runs were made with. Move it
 * with any change to the items below, to their order or separators, or to how buckets are cut.
 */
export const FORMAT_VERSION = 3;

/** The item a JSON answer holds per bucket: a whole candle, or the contract's open. */
export type ItemShape = 'candle' | 'open';

/**
 * A bucket start as JavaScript's toISOString() writes it (millisecond precision, UTC). On grids
 * whose stamps are whole seconds (all but an origin with milliseconds) the timestamp's own text
 * serves, cheaper than to_char (a fifth to a third of an item's formatting; `replace` works on
 * bytes where `overlay` counts characters): in UTC under
 * DateStyle ISO, which every session pins (sessionSettings.ts), it reads `YYYY-MM-DD HH:MI:SS`.
 */
function isoInstant(grid: GridSpec): SqlFragment {
  if (!stampsOnWholeSeconds(grid)) {
    return sql.fragment`to_char(bucket AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  }
  return sql.fragment`replace((bucket AT TIME ZONE 'UTC')::text, ' ', 'T') || '.000Z'`;
}
/**
 * A float8 column as a JSON value: PostgreSQL prints the shortest text that reads back as the
 * same double (extra_float_digits ≥ 1, the default), as JSON.stringify does. Stored prices are
 * finite (sql/0080_finite_prices.sql), so the text is always a JSON number; NULL is null.
 */
const jsonNumber = (column: 'open' | 'high' | 'low' | 'close' | 'volume') =>
  sql.fragment`coalesce(${sql.identifier([column])}::text, 'null')`;
/** A candle row (bucket and its columns) as the JSON text of an analyst route's item. */
export const candleItem = (grid: GridSpec) => sql.fragment`
  '{"timestamp":"' || ${isoInstant(grid)} || '","open":' || ${jsonNumber('open')} ||
  ',"high":' || ${jsonNumber('high')} || ',"low":' || ${jsonNumber('low')} ||
  ',"close":' || ${jsonNumber('close')} || ',"volume":' || ${jsonNumber('volume')} ||
  ',"count":' || count || '}'`;
/** A bucket's open as the JSON text of a contract history item. */
export const openItem = (grid: GridSpec) =>
  sql.fragment`'{"timestamp":"' || ${isoInstant(grid)} || '","value":' || ${jsonNumber('open')} || '}'`;
/** A candle with neither an observation nor a filled value. */
export const CANDLE_IS_EMPTY = sql.fragment`count = 0 AND open IS NULL`;

/**
 * The pieces of one JSON array holding the given runs of items (each run the comma-separated
 * texts of its items), in order: `a,b` and `c` make the pieces of `[a,b,c]`. The pieces are
 * written one after the other rather than joined, which would copy the whole body once more (a
 * megabyte for a year of hourly candles).
 */
export function jsonArrayPieces<T extends string | Buffer>(runs: readonly T[]): Array<T | string> {
  const items = runs.filter((run) => run.length > 0);
  return ['[', ...items.flatMap((item, i) => (i === 0 ? [item] : [',', item])), ']'];
}
