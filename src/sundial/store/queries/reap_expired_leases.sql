-- Runs whose lease ran out: back to pending (the next claim increments attempt), or ended when
-- their retries are spent or a cancel was requested. Database time decides what expired.
WITH expired AS (
    SELECT id FROM job_runs
    WHERE state = 'running' AND lease_until < now()
    ORDER BY lease_until
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE job_runs r
SET state = CASE
        WHEN r.cancel_requested THEN 'cancelled'
        WHEN r.retries_used >= r.max_retries THEN 'dead_lettered'
        ELSE 'pending'
    END,
    retries_used = r.retries_used
        + CASE WHEN NOT r.cancel_requested AND r.retries_used < r.max_retries THEN 1 ELSE 0 END,
    finished_at = CASE
        WHEN r.cancel_requested OR r.retries_used >= r.max_retries THEN now()
    END,
    lease_expiries = r.lease_expiries + 1,
    lease_until = NULL,
    failure_reason = CASE WHEN r.cancel_requested THEN 'cancelled' ELSE 'lease_expired' END,
    failure_detail = NULL,
    last_error = format('the lease of worker %%s expired during attempt %%s', r.lease_owner, r.attempt)
FROM expired
WHERE r.id = expired.id
RETURNING r.id, r.attempt, r.state, r.has_dependents, r.started_at, r.lease_owner, r.last_error
-- Plan: the CTE reads job_runs_running_by_lease_idx from its oldest lease up to now() (an
-- index range: only the expired runs, however many are running) and the UPDATE probes the
-- primary key per picked id. Checked by tests/integration/store/test_stable_plans.py.
