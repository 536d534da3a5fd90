#!/bin/sh
# The read replica: on an empty volume, a base backup of the primary (pg_basebackup -R, through a
# physical slot so the primary keeps the WAL it has not received), then PostgreSQL as a hot
# standby streaming from it. Same image as the primary, so TimescaleDB is there too.
set -eu
PRIMARY_HOST="${PRIMARY_HOST:-timescaledb}"
SLOT="${REPLICA_SLOT:-replica1}"
export PGPASSWORD="$POSTGRES_PASSWORD"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  until pg_isready -q -h "$PRIMARY_HOST" -U "$POSTGRES_USER" -d postgres; do sleep 1; done
  psql -h "$PRIMARY_HOST" -U "$POSTGRES_USER" -d postgres -Atc \
    "SELECT pg_create_physical_replication_slot('$SLOT', true)
     WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = '$SLOT')"
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  su-exec postgres pg_basebackup -h "$PRIMARY_HOST" -U "$POSTGRES_USER" -D "$PGDATA" \
    -R -X stream -S "$SLOT" -c fast
fi
exec su-exec postgres postgres -c hot_standby=on
