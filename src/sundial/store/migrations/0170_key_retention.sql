-- Retention of idempotency keys and fire keys (docs/adr/0034-key-retention.md).
--
-- The maintainer deletes keys written longer ago than its key retention whose run has left
-- the hot table, in bounded batches: `WHERE created_at < cutoff ... LIMIT batch`. Without an
-- index on created_at each batch would read both tables whole (they gain a row per keyed run
-- and per fire, hundreds of millions at the design's peak). A B-tree, not a BRIN: deleted space
-- is reused by new rows, which would widen every BRIN range until each batch read them all.
--
-- CREATE INDEX (not CONCURRENTLY: a migration is one transaction) blocks writes to both tables
-- while it reads them once.
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
CREATE INDEX schedule_fires_created_idx ON schedule_fires (created_at);
