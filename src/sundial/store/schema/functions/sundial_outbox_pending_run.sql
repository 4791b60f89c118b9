-- Current definition; last changed by migrations/0360_hot_queue_outbox.sql.
-- The hot queue's outbox: a run whose state became pending (promoted when due, released by its
-- last upstream, replayed, a retry's backoff over). Its trigger is disabled unless the hot
-- queue is on Redis (docs/adr/0024-hot-queue-move.md).
CREATE OR REPLACE FUNCTION sundial_outbox_pending_run() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO hot_queue_outbox (run_id, namespace) VALUES (NEW.id, NEW.namespace);
    RETURN NULL;
END
$$;
