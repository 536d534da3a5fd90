-- create_hypertable added its default time index beside the one 0003 declared: keep one.
DROP INDEX IF EXISTS news_sentiment_publish_date_idx;

-- The closed vocabularies of the analysis service, enforced below the API as well.
ALTER TABLE predictions ADD CONSTRAINT predictions_model_type
  CHECK (model_type IN ('lstm', 'complex_lstm', 'multi_layer', 'complex_multi_layer'));
ALTER TABLE training_sessions ADD CONSTRAINT training_sessions_model_type
  CHECK (model_type IN ('lstm', 'complex_lstm', 'multi_layer', 'complex_multi_layer'));
ALTER TABLE training_sessions ADD CONSTRAINT training_sessions_query_type
  CHECK (query_type IN ('current_price', 'historical_price', 'historical_price_spaced'));
ALTER TABLE training_sessions ADD CONSTRAINT training_sessions_query_load
  CHECK (query_load IN ('batches', 'bulk'));
ALTER TABLE training_sessions ADD CONSTRAINT training_sessions_training_device
  CHECK (training_device ~ '^(cpu|gpu_[0-9]{1,3})$');
