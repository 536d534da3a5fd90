-- A counter per currency that moves whenever rolled-up rows below a watermark are rewritten
-- (a backfill recomputed). Everything else only appends beyond the watermarks, so answers read
-- from materialised rollups stay valid for as long as the currency's revision does: the data
-- module keeps their formatted text under it (src/data/history/runCache.ts). The bump commits
-- in the same transaction that consumes the invalidation marks, so no reader ever sees the
-- marks gone and the old revision at once.
CREATE TABLE rollup_revisions (
  currency_code text        PRIMARY KEY,
  revision      bigint      NOT NULL DEFAULT 1,
  changed_at    timestamptz NOT NULL DEFAULT now()
);
