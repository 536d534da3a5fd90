-- Change notifications for what processes keep in memory between requests (the encoded price
-- snapshot, verified service tokens: src/shared/db/changeEvents.ts). A statement-level trigger
-- on every table the copy is made of NOTIFYs its topic's channel in the writing transaction, so
-- listeners hear of the change when it commits, never before, whoever wrote it (harvest, bulk
-- loads and backfills, token revocation, manual SQL). PostgreSQL folds identical notifications
-- of one transaction into one, so a load of many statements costs one message.
CREATE FUNCTION notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(TG_ARGV[0], '');
  RETURN NULL;
END
$$;

-- The snapshot: current prices, currency names, and the rows its 24-hour statistics come from.
CREATE TRIGGER currency_snapshots_changed AFTER INSERT OR UPDATE OR DELETE ON currency_snapshots
  FOR EACH STATEMENT EXECUTE FUNCTION notify_change('market_snapshot_changed');
CREATE TRIGGER currency_snapshots_truncated AFTER TRUNCATE ON currency_snapshots
  FOR EACH STATEMENT EXECUTE FUNCTION notify_change('market_snapshot_changed');
CREATE TRIGGER currencies_changed AFTER INSERT OR UPDATE OR DELETE ON currencies
  FOR EACH STATEMENT EXECUTE FUNCTION notify_change('market_snapshot_changed');
CREATE TRIGGER currencies_truncated AFTER TRUNCATE ON currencies
  FOR EACH STATEMENT EXECUTE FUNCTION notify_change('market_snapshot_changed');
CREATE TRIGGER price_observations_changed AFTER INSERT OR UPDATE OR DELETE ON price_observations
  FOR EACH STATEMENT EXECUTE FUNCTION notify_change('market_snapshot_changed');
CREATE TRIGGER price_observations_truncated AFTER TRUNCATE ON price_observations
  FOR EACH STATEMENT EXECUTE FUNCTION notify_change('market_snapshot_changed');

-- Tokens: anything that can make a verified token invalid or change its scopes (last_used_at,
-- written as tokens are used, is left out on purpose).
CREATE TRIGGER service_tokens_changed AFTER UPDATE OF token_hash, scopes, revoked_at OR DELETE
  ON service_tokens FOR EACH STATEMENT EXECUTE FUNCTION notify_change('service_tokens_changed');
CREATE TRIGGER service_tokens_truncated AFTER TRUNCATE ON service_tokens
  FOR EACH STATEMENT EXECUTE FUNCTION notify_change('service_tokens_changed');
