import { sql } from 'slonik';
import { z } from 'zod';
import type { Check, DoctorContext } from '../../../shared/diagnostics.ts';

const gapRow = z.object({ minutes: z.number(), currencies: z.number() });

/**
 * `platform doctor` line for gap healing: the minutes recorded as known gaps (no exchange had
 * them). Informational: a delisting or a halt is a fact of the market, not a fault here.
 */
export async function checkKnownGaps({ pool }: DoctorContext): Promise<Check[]> {
  const gaps = await pool.one(sql.type(gapRow)`
    SELECT count(*)::int AS minutes, count(DISTINCT currency_code)::int AS currencies
      FROM price_gaps`);
  return [
    {
      name: 'gaps',
      ok: true,
      detail:
        gaps.minutes === 0
          ? 'no known gap minutes (every minute healed so far was found at an exchange)'
          : `${gaps.minutes} known gap minute(s) in ${gaps.currencies} currenc${gaps.currencies === 1 ? 'y' : 'ies'} (no exchange has them; not asked for again)`,
    },
  ];
}
