import { readFileSync } from 'node:fs';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';

export const currencyCodeSchema = z
  .string()
  .regex(/^[A-Za-z0-9]{1,15}$/, 'a currency code is 1 to 15 letters or digits')
  .transform((code) => code.toUpperCase());

export const currencyEntrySchema = z.object({
  code: z.string().regex(/^[A-Z0-9]{1,15}$/),
  name: z.string().min(1).max(100),
});
export type CurrencyEntry = z.infer<typeof currencyEntrySchema>;

/** The list that ships with the platform, largest market capitalisation first. */
export function shippedCurrencies(): CurrencyEntry[] {
  const raw: unknown = JSON.parse(readFileSync(new URL('./catalog.json', import.meta.url), 'utf8'));
  return z.array(currencyEntrySchema).parse(raw);
}

/**
 * Upserts currencies; names are refreshed and ranks kept from the first list that ranked them.
 * One statement whatever the list's length.
 */
export async function upsertCurrencies(
  pool: DatabasePool,
  entries: Array<CurrencyEntry & { rank?: number | null }>,
): Promise<number> {
  if (entries.length === 0) return 0;
  const rows = entries.map((e) => ({ code: e.code, name: e.name, rank: e.rank ?? null }));
  const result = await pool.query(sql.unsafe`
    INSERT INTO currencies (code, name, rank)
    SELECT code, name, rank FROM jsonb_to_recordset(${sql.jsonb(rows)}) AS x(code text, name text, rank int)
    ON CONFLICT (code) DO UPDATE
      SET name = EXCLUDED.name,
          rank = coalesce(currencies.rank, EXCLUDED.rank),
          updated_at = now()
      WHERE currencies.name IS DISTINCT FROM EXCLUDED.name
         OR (currencies.rank IS NULL AND EXCLUDED.rank IS NOT NULL)
  `);
  return result.rowCount;
}

export async function currencyExists(pool: DatabasePool, code: string): Promise<boolean> {
  return pool.exists(sql.unsafe`SELECT 1 FROM currencies WHERE code = ${code}`);
}
