-- The latest slot each sub-minute recurring task (see src/worker/recurring.ts) has completed.
-- A cycle claims its slot in the transaction that does its work, and only a slot newer than the
-- recorded one can be claimed: a slot runs at most once and never after a later one, however
-- many workers, leaders or retries are about. One row per task, whatever the cadence.
CREATE TABLE recurring_slots (
  task         text PRIMARY KEY,
  slot_start   timestamptz NOT NULL,
  completed_at timestamptz NOT NULL DEFAULT now()
);
