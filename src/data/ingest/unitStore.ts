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
  const found = await client.query('SELECT 1 FROM ingest_units WHERE unit_key = $1', [key]);
  return (found.rowCount ?? 0) > 0;
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
