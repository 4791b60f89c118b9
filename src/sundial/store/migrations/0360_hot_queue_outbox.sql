-- The outbox of the Redis hot queue (sundial.store.hot_queue, docs/adr/0024-hot-queue-move.md).
--
-- With the hot queue on Redis, every run that becomes pending must reach Redis's due set, by
-- whichever path it became pending: inserted pending (a submission, a fire), promoted when due
-- (a delay, a retry's backoff, a concurrency key's turn), released by its last upstream, or
-- replayed. Each of those writes the run's row; the triggers below add an outbox entry in the
-- same transaction, so no path can forget one, and the relay moves entries to Redis (at least
-- once: adding a run to its due set is idempotent by run id).
--
-- The triggers are created disabled: PostgreSQL alone (the default) pays nothing for them,
-- not even the capture of an UPDATE's rows (the update trigger is a row trigger with a WHEN
-- clause, not a statement trigger with transition tables, for that reason). Turning the hot
-- queue on enables them (sundial.store.hot_queue.outbox.switch, as the table's owner).
CREATE TABLE hot_queue_outbox (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id      bigint NOT NULL,
    -- The run's, so a relay whose login is kept to namespaces takes only their entries.
    namespace   text,
    recorded_at timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE hot_queue_outbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY kept_to_namespaces ON hot_queue_outbox
    USING ((SELECT sundial_login_namespaces()) IS NULL
           OR namespace = ANY ((SELECT sundial_login_namespaces())::text[]));

-- Runs inserted pending, a statement at a time (an insert's rows are captured for the quota
-- and notify triggers already).
CREATE FUNCTION sundial_outbox_inserted_runs() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO hot_queue_outbox (run_id, namespace)
    SELECT n.id, n.namespace FROM new_runs n WHERE n.state = 'pending' ORDER BY n.id;
    RETURN NULL;
END
$$;

-- A run whose state became pending (promoted, released, replayed, a retry due).
CREATE FUNCTION sundial_outbox_pending_run() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO hot_queue_outbox (run_id, namespace) VALUES (NEW.id, NEW.namespace);
    RETURN NULL;
END
$$;

CREATE TRIGGER job_runs_outbox_inserted AFTER INSERT ON job_runs
    REFERENCING NEW TABLE AS new_runs
    FOR EACH STATEMENT EXECUTE FUNCTION sundial_outbox_inserted_runs();
CREATE TRIGGER job_runs_outbox_pending AFTER UPDATE OF state ON job_runs
    FOR EACH ROW WHEN (NEW.state = 'pending' AND OLD.state <> 'pending')
    EXECUTE FUNCTION sundial_outbox_pending_run();
ALTER TABLE job_runs DISABLE TRIGGER job_runs_outbox_inserted;
ALTER TABLE job_runs DISABLE TRIGGER job_runs_outbox_pending;
