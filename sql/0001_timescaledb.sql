-- TimescaleDB must be preloaded (shared_preload_libraries); `npm run db:provision` sees to that.
CREATE EXTENSION IF NOT EXISTS timescaledb;
