-- Fair share between namespaces: a claim takes each namespace's due runs from that namespace's
-- own head of the queue, so one namespace flooding at the top priority cannot hold another's
-- runs back (queries/claim.sql). This index lists the namespaces that have pending runs (one
-- probe each, a loose index scan) and walks each one's runs in dispatch order.
--
-- CREATE INDEX (not CONCURRENTLY: a migration is one transaction) blocks writes to job_runs
-- while it builds; the pending rows are a small part of the hot table, so it is short.
CREATE INDEX job_runs_pending_by_namespace_idx ON job_runs (namespace, dispatch_key)
    WHERE state = 'pending';
