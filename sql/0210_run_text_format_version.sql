-- Rendered history texts are keyed by the code's answer format too (FORMAT_VERSION in
-- src/data/history/jsonText.ts), not only by the data's revision: after a deploy that changes
-- the bytes of an item or how buckets are cut, texts written by the older code are never read
-- (they would splice old-format runs into new answers), and the worker renders the runs anew.
-- Texts kept so far carry no version, so they go: they are derived and rendered again.
DELETE FROM history_run_texts;
ALTER TABLE history_run_texts ADD COLUMN format_version integer NOT NULL;
ALTER TABLE history_run_texts DROP CONSTRAINT history_run_texts_pkey;
-- Both versions of a run may coexist while old and new processes run side by side in a rolling
-- deploy; each reads only its own.
ALTER TABLE history_run_texts
  ADD PRIMARY KEY (currency_code, shape, interval_seconds, format_version, run_start);
