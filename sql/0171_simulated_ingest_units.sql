-- Simulated history (the simulated market's own past, loaded at a first start or by
-- `platform backfill --source simulated`) is recorded per day like files and exchange slices.
ALTER TABLE ingest_units DROP CONSTRAINT ingest_units_kind_check;
ALTER TABLE ingest_units
  ADD CONSTRAINT ingest_units_kind_check CHECK (kind IN ('file', 'exchange', 'simulated'));
