-- Take up to %(limit)s entries off the hot queue's outbox, oldest first, and return the runs
-- they name, one row per run: queue and the rest NULL for a run no longer pending (claimed on
-- PostgreSQL, cancelled, archived), which needs nothing and whose entry just goes. SKIP
-- LOCKED: relays side by side take different entries. The entries are deleted in the relay's
-- transaction, which commits only after Redis took the runs, so a relay that dies leaves them
-- for the next. The attempt is the record's last as of this transaction (see enqueue.lua).
-- Runs of the pod model are not delivered: the pod launcher claims them from PostgreSQL.
-- `= ANY(ARRAY(...))`, not `IN (...)`: with IN the planner hash-joins the taken ids against
-- the whole outbox, a sequential scan per batch that grows with the backlog; the array makes
-- the delete a probe of the primary key, so a take costs the same at any depth.
WITH taken AS (
    DELETE FROM hot_queue_outbox
    WHERE id = ANY(ARRAY(
        SELECT id FROM hot_queue_outbox ORDER BY id LIMIT %(limit)s FOR UPDATE SKIP LOCKED
    ))
    RETURNING run_id
)
SELECT t.run_id, r.queue, r.namespace, r.handler, r.execution_model, r.dispatch_key, r.attempt
FROM (SELECT DISTINCT run_id FROM taken) t
LEFT JOIN job_runs r ON r.id = t.run_id AND r.state = 'pending'
    AND r.execution_model IS DISTINCT FROM 'pod'
