-- A claim walks each namespace's pending runs of each queue it serves, not the namespace's
-- pending runs of every queue (queries/claim.sql). With the namespace index alone, a runner of
-- one queue stepped over every pending run of the other queues in the same namespace, and a
-- claim's cost grew with a backlog it could not take: a one-run claim of a quiet queue took
-- 10.6 ms beside 50,000 pending runs of another queue, 1.3 ms beside 2,000.
--
-- This index replaces job_runs_pending_by_namespace_idx (namespace, dispatch_key): it serves
-- the same loose walk over namespaces (its leading column) and each (namespace, queue) walk in
-- dispatch order. A runner of the previous release, still serving during a rolling upgrade,
-- claims correctly through it (its walk reads a namespace's queues in turn), only no faster.
--
-- CREATE INDEX (not CONCURRENTLY: a migration is one transaction) blocks writes to job_runs
-- while it builds; the pending rows are a small part of the hot table, so it is short.
CREATE INDEX job_runs_pending_by_queue_idx ON job_runs (namespace, queue, dispatch_key)
    WHERE state = 'pending';
DROP INDEX job_runs_pending_by_namespace_idx;
