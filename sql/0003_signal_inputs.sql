-- Signal inputs from the news harvesters and the analysis service.

-- News sentiment is a time series by publication date. TimescaleDB requires every unique index of
-- a hypertable to include the time column, so the "each articleId once" rule lives in a small
-- guard table keyed by article id alone.
CREATE TABLE news_articles (
  article_id   bigint PRIMARY KEY,
  publish_date timestamptz NOT NULL
);

CREATE TABLE news_sentiment (
  article_id       bigint           NOT NULL,
  publish_date     timestamptz      NOT NULL,
  title            text             NOT NULL,
  source           text             NOT NULL,
  url              text             NOT NULL,
  positive_score   double precision NOT NULL,
  neutral_score    double precision NOT NULL,
  negative_score   double precision NOT NULL,
  composite_score  double precision NOT NULL,
  crypto_relevance double precision NOT NULL,
  weighted_score   double precision NOT NULL,
  received_at      timestamptz      NOT NULL DEFAULT now(),
  PRIMARY KEY (article_id, publish_date)
);
SELECT create_hypertable('news_sentiment', by_range('publish_date', INTERVAL '30 days'));
CREATE INDEX news_sentiment_publish_date ON news_sentiment (publish_date DESC);

-- Predictions are addressed by id (training sessions refer to them, 422 when unknown), so they
-- stay a plain table with an identity key; their time index serves range reads.
CREATE TABLE predictions (
  id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  currency_code      text             NOT NULL REFERENCES currencies (code),
  predicted_price    double precision NOT NULL,
  actual_price       double precision NOT NULL,
  price_difference   double precision NOT NULL,
  percent_difference double precision NOT NULL,
  model_type         text             NOT NULL,
  num_rows           integer          NOT NULL,
  last_updated       timestamptz      NOT NULL,
  received_at        timestamptz      NOT NULL DEFAULT now()
);
CREATE INDEX predictions_currency_time ON predictions (currency_code, last_updated);

CREATE TABLE training_sessions (
  id                     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  currency_code          text             NOT NULL REFERENCES currencies (code),
  prediction_id          bigint           NOT NULL REFERENCES predictions (id),
  num_rows               integer          NOT NULL,
  epochs_trained         integer          NOT NULL,
  max_epochs             integer          NOT NULL,
  starting_loss          double precision NOT NULL,
  final_loss             double precision NOT NULL,
  model_type             text             NOT NULL,
  query_type             text             NOT NULL,
  training_start_time    timestamptz      NOT NULL,
  training_end_time      timestamptz      NOT NULL,
  query_start_time       timestamptz      NOT NULL,
  query_end_time         timestamptz      NOT NULL,
  sequence_length        integer          NOT NULL,
  batch_size             integer          NOT NULL,
  dimension_width        integer          NOT NULL,
  query_load             text             NOT NULL,
  query_batch_size       integer,
  training_device        text             NOT NULL,
  short_sequence_length  integer,
  medium_sequence_length integer,
  long_sequence_length   integer,
  received_at            timestamptz      NOT NULL DEFAULT now()
);
CREATE INDEX training_sessions_currency_time ON training_sessions (currency_code, training_start_time);
CREATE INDEX training_sessions_prediction ON training_sessions (prediction_id);
