import { sql, type DatabasePool } from 'slonik';
import { ValidationError } from '../../shared/errors.ts';
import type { CandleRow } from './answerSql.ts';
import type { CandleRequest, FillMode } from './request.ts';

/** The request fields the analyst routes and `platform export` share. */
export interface CandleWindowInput {
  interval: number;
  from?: Date;
  to?: Date;
  hours?: number;
  fill: FillMode;
  tz?: string;
  origin?: Date;
  offset?: number;
}

export function candleRequestFrom(
  code: string,
  input: CandleWindowInput,
  now = new Date(),
): CandleRequest {
  const to = input.from ? (input.to ?? now) : now;
  const from = input.from ?? new Date(now.getTime() - (input.hours ?? 24) * 3_600_000);
  if (from.getTime() >= to.getTime()) {
    throw new ValidationError("Invalid query parameter 'from': must be before to (default: now)", [
      { path: 'query.from', message: 'must be before to (default: now)' },
    ]);
  }
  return {
    code,
    from,
    to,
    intervalSeconds: input.interval,
    fill: input.fill,
    ...(input.tz ? { timeZone: input.tz } : {}),
    ...(input.origin ? { origin: input.origin } : {}),
    ...(input.offset ? { offsetSeconds: input.offset } : {}),
  };
}

/**
 * The runtime's zone list (which validated the name) and PostgreSQL's can differ; ask the
 * database before a stream starts, when a 400 can still be sent.
 */
export async function assertZoneKnownToDatabase(pool: DatabasePool, zone: string | undefined) {
  if (!zone) return;
  try {
    await pool.query(sql.unsafe`SELECT now() AT TIME ZONE ${zone}::text`);
  } catch {
    throw new ValidationError(`Invalid query parameter 'tz': unknown time zone '${zone}'`, [
      { path: 'query.tz', message: 'not a time zone the database knows' },
    ]);
  }
}

export interface CandleJson {
  timestamp: string;
  open: number | null;
  high: number | null;
  low: number | null;
  close: number | null;
  volume: number;
  count: number;
}

export function candleJson(row: CandleRow): CandleJson {
  return {
    timestamp: row.timestamp.toISOString(),
    open: row.open,
    high: row.high,
    low: row.low,
    close: row.close,
    volume: row.volume,
    count: row.count,
  };
}

export const CSV_HEADER = 'timestamp,open,high,low,close,volume,count\n';

// Every field is an ISO instant or a number (null: empty), so no field ever needs quoting.
const csvField = (value: number | string | null) => (value === null ? '' : String(value));

export async function* csvLines(rows: AsyncIterable<CandleRow>): AsyncGenerator<string> {
  yield CSV_HEADER;
  for await (const row of rows) {
    const c = candleJson(row);
    yield `${[c.timestamp, c.open, c.high, c.low, c.close, c.volume, c.count].map(csvField).join(',')}\n`;
  }
}

export async function* ndjsonLines(rows: AsyncIterable<CandleRow>): AsyncGenerator<string> {
  for await (const row of rows) yield `${JSON.stringify(candleJson(row))}\n`;
}

export const EXPORT_CONTENT_TYPES = {
  csv: 'text/csv; charset=utf-8',
  ndjson: 'application/x-ndjson; charset=utf-8',
} as const;
