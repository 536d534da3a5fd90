-- The schemas the platform installs from its dependencies (graphile-worker's job queue) and the
-- version that installed them, written by each migration run that ran their migrations. A later
-- run that finds every file of sql/ applied and the same versions has nothing to do, and skips
-- loading the migration runners (src/shared/db/migrate.ts): most of a short command's start-up.
CREATE TABLE schema_components (
  name    text PRIMARY KEY,
  version text NOT NULL
);
