-- Predictions and training sessions are time series too (one per currency, model and run, read by
-- time range and bucketed by time), so they become hypertables like news_sentiment.
--
-- TimescaleDB cannot point a foreign key from one hypertable to another, so training_sessions
-- loses its foreign key to predictions. The statement that inserts a training session checks the
-- prediction in the same statement (422 when unknown) and nothing deletes predictions. Each
-- session also keeps its prediction's time, so joining the two prunes prediction chunks.

ALTER TABLE training_sessions DROP CONSTRAINT training_sessions_prediction_id_fkey;

-- Unique keys of a hypertable must hold its time column; ids stay unique through their sequence.
ALTER TABLE predictions DROP CONSTRAINT predictions_pkey;
ALTER TABLE predictions ADD CONSTRAINT predictions_pkey PRIMARY KEY (id, last_updated);
-- Reads go by currency and time (predictions_currency_time) or by id (the key): no time-only index.
SELECT create_hypertable(
  'predictions', by_range('last_updated', INTERVAL '30 days'),
  create_default_indexes => false, migrate_data => true
);

ALTER TABLE training_sessions ADD COLUMN prediction_time timestamptz;
UPDATE training_sessions t SET prediction_time = p.last_updated
FROM predictions p WHERE p.id = t.prediction_id;
ALTER TABLE training_sessions ALTER COLUMN prediction_time SET NOT NULL;
ALTER TABLE training_sessions DROP CONSTRAINT training_sessions_pkey;
ALTER TABLE training_sessions ADD CONSTRAINT training_sessions_pkey PRIMARY KEY (id, training_start_time);
-- The default index on training_start_time serves listings filtered by time alone, newest first.
SELECT create_hypertable(
  'training_sessions', by_range('training_start_time', INTERVAL '30 days'), migrate_data => true
);
CREATE INDEX training_sessions_model_time ON training_sessions (model_type, training_start_time DESC);
DROP INDEX training_sessions_prediction;
CREATE INDEX training_sessions_prediction ON training_sessions (prediction_id, prediction_time);
