-- History texts are no longer rendered into the database. With the rollup levels of
-- sql/0220_rollup_levels.sql, the pre-rendered whole hourly runs saved no CPU per request of the
-- data module beyond this machine's noise (`npm run bench:history:compare`, bench/RESULTS.md),
-- while they cost a worker step after every refresh, storage counted against the derived-data
-- budget, and a second place where a stale answer format could hide. Settled runs are still kept
-- in each data module's memory (src/data/history/runCache.ts), keyed by the format version.
DROP TABLE history_run_texts;
