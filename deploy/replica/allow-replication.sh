#!/bin/sh
# Runs once, when the primary's data directory is initialised (docker-entrypoint-initdb.d): lets
# the replica service stream WAL as the platform user, with the same password rule as every
# other connection.
set -eu
echo "host replication ${POSTGRES_USER} all scram-sha-256" >> "$PGDATA/pg_hba.conf"
