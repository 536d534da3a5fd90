import { sql, type CommonQueryMethods } from 'slonik';

/**
 * Claims `slotStart` for `task` inside the caller's transaction: true when no run of this or a
 * later slot has committed. A concurrent claimant waits on the row lock and, once the first
 * commits, finds the slot taken; if the first rolls back, the slot is free again.
 */
export async function claimSlot(
  db: CommonQueryMethods,
  task: string,
  slotStart: Date,
): Promise<boolean> {
  const claimed = await db.query(sql.unsafe`
    INSERT INTO recurring_slots AS s (task, slot_start) VALUES (${task}, ${sql.timestamp(slotStart)})
    ON CONFLICT (task) DO UPDATE SET slot_start = EXCLUDED.slot_start, completed_at = now()
      WHERE s.slot_start < EXCLUDED.slot_start
  `);
  return claimed.rowCount === 1;
}
