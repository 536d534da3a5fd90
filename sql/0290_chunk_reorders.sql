-- The closed chunks (time range ended a day ago) whose rows were put in (currency_code, time) order, each once
-- (src/data/history/reorderChunks.ts): every write path writes all currencies of the same time
-- together, and one currency's history read from a chunk so written touches a heap page per row.
-- Chunks by schema-qualified name: chunk names are never reused, and a row for a dropped chunk
-- matches nothing.
CREATE TABLE chunk_reorders (
  chunk        text PRIMARY KEY,
  reordered_at timestamptz NOT NULL DEFAULT now()
);
