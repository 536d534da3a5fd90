import type pg from 'pg';
import type { LoadPath, Rejection } from './types.ts';

export interface CompletedUnit {
  key: string;
  kind: 'file' | 'exchange' | 'simulated';
  source: string;
  label: string;
  contentSha256?: string | undefined;
  read: number;
  inserted: number;
  duplicates: number;
  rejected: number;
  rejections: Rejection[];
  path: LoadPath;
}

/** Serialises work on one unit across processes; released when the transaction ends. */
export async function lockUnit(client: pg.ClientBase, key: string): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [key]);
}

export async function isUnitComplete(client: pg.ClientBase, key: string): Promise<boolean> {
  return (await recordedUnit(client, key)) !== null;
}

/** What the completion record of a loaded unit says, or null when the unit was never loaded. */
export interface RecordedUnit {
  /** Rows that load rejected (a load without --strict keeps the valid rows of a unit). */
  rejected: number;
}

export async function recordedUnit(
  client: pg.ClientBase,
  key: string,
): Promise<RecordedUnit | null> {
  const found = await client.query<{ rows_rejected: string }>(
    'SELECT rows_rejected FROM ingest_units WHERE unit_key = $1',
    [key],
  );
  const row = found.rows[0];
  return row ? { rejected: Number(row.rows_rejected) } : null;
}

/** Records a unit as loaded; part of the transaction that wrote its rows. */
export async function recordUnit(client: pg.ClientBase, unit: CompletedUnit): Promise<void> {
  await client.query(
    `INSERT INTO ingest_units (unit_key, kind, source, label, content_sha256, rows_read, rows_inserted,
                               rows_duplicate, rows_rejected, rejections, load_path)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11)
     ON CONFLICT (unit_key) DO UPDATE SET
       source = EXCLUDED.source, label = EXCLUDED.label, content_sha256 = EXCLUDED.content_sha256,
       rows_read = EXCLUDED.rows_read, rows_inserted = EXCLUDED.rows_inserted,
       rows_duplicate = EXCLUDED.rows_duplicate, rows_rejected = EXCLUDED.rows_rejected,
       rejections = EXCLUDED.rejections, load_path = EXCLUDED.load_path, completed_at = now()`,
    [
      unit.key,
      unit.kind,
      unit.source,
      unit.label,
      unit.contentSha256 ?? null,
      unit.read,
      unit.inserted,
      unit.duplicates,
      unit.rejected,
      JSON.stringify(unit.rejections.map((r) => ({ line: r.line, reason: r.reason }))),
      unit.path,
    ],
  );
}

/** Which of `keys` are recorded as loaded (one query for a whole plan). */
export async function completedUnitKeys(
  client: pg.ClientBase,
  keys: string[],
): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const found = await client.query<{ unit_key: string }>(
    'SELECT unit_key FROM ingest_units WHERE unit_key = ANY($1::text[])',
    [keys],
  );
  return new Set(found.rows.map((r) => r.unit_key));
}
