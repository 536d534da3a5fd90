-- Every worker process says it is alive here every few seconds (graphile-worker 0.18 keeps no
-- table of its workers). `platform doctor` and the worker's readiness read it; a worker that stops
-- gracefully removes its row, one that dies leaves a row that simply goes stale.
CREATE TABLE worker_heartbeats (
  worker_id    text        PRIMARY KEY,
  hostname     text        NOT NULL,
  pid          integer     NOT NULL,
  started_at   timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX worker_heartbeats_last_seen ON worker_heartbeats (last_seen_at);
