import { sql } from 'slonik';
import { z } from 'zod';
import type { Check, DoctorContext } from '../../../shared/diagnostics.ts';
import { countOpenMinutes, healedMinutes, healWindow } from './openGaps.ts';

const gapRow = z.object({ minutes: z.number(), currencies: z.number() });

const currencies = (n: number) => `${n} currenc${n === 1 ? 'y' : 'ies'}`;

/**
 * `platform doctor` lines for gap healing: the minutes still open in the look-back window (by the
 * rule the heal job follows), the minutes it has filled, and those recorded as known gaps (no
 * exchange had them). Informational: an outage leaves open minutes until the next pass fills them,
 * and a delisting or a halt is a fact of the market, not a fault here.
 */
export async function checkGaps({ pool, config }: DoctorContext): Promise<Check[]> {
  const hours = config.HEAL_LOOKBACK_HOURS;
  const open = await countOpenMinutes(pool, healWindow(Date.now(), hours));
  const healed = await healedMinutes(pool);
  const known = await pool.one(sql.type(gapRow)`
    SELECT count(*)::int AS minutes, count(DISTINCT currency_code)::int AS currencies
      FROM price_gaps`);
  const healedTotal = healed.reduce((sum, row) => sum + row.minutes, 0);
  return [
    {
      name: 'gaps',
      ok: true,
      detail:
        hours === 0
          ? 'gap healing is off (HEAL_LOOKBACK_HOURS=0)'
          : open.minutes === 0
            ? `no open gap minute in the last ${hours} h`
            : `${open.minutes} open gap minute(s) in ${currencies(open.currencies)} in the last ${hours} h ` +
              '(the heal job fills them every 15 minutes; `platform heal` does it now)',
    },
    {
      name: 'healed',
      ok: true,
      detail:
        healedTotal === 0
          ? 'no minute healed yet'
          : `${healedTotal} gap minute(s) healed (${healed.map((r) => `${r.minutes} from ${r.source}`).join(', ')})`,
    },
    {
      name: 'known-gaps',
      ok: true,
      detail:
        known.minutes === 0
          ? 'no known gap minutes (every minute healed so far was found at an exchange)'
          : `${known.minutes} known gap minute(s) in ${currencies(known.currencies)} (no exchange has them; not asked for again)`,
    },
  ];
}
