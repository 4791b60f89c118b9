-- Current definition; last changed by migrations/0360_hot_queue_outbox.sql.
-- The hot queue's outbox: runs inserted pending (a submission, a fire), a statement at a time.
-- Its trigger is disabled unless the hot queue is on Redis (docs/adr/0024-hot-queue-move.md).
CREATE OR REPLACE FUNCTION sundial_outbox_inserted_runs() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO hot_queue_outbox (run_id, namespace)
    SELECT n.id, n.namespace FROM new_runs n WHERE n.state = 'pending' ORDER BY n.id;
    RETURN NULL;
END
$$;
