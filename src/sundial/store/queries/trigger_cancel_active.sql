-- Replace: cancel every active run of these jobs, with runs.cancel's semantics: a run that
-- has not started ends now; a running one gets the flag its worker's next heartbeat returns.
-- `held`: runs the hot queue's Redis holds, pending in the record, asked to stop apart
-- (cancel_held.sql) and left alone here.
UPDATE job_runs
SET cancel_requested = true,
    state = CASE WHEN state = 'running' THEN state ELSE 'cancelled' END,
    finished_at = CASE WHEN state = 'running' THEN finished_at ELSE now() END,
    failure_reason = CASE WHEN state = 'running' THEN failure_reason ELSE 'cancelled' END,
    failure_detail = CASE WHEN state = 'running' THEN failure_detail END,
    last_error = CASE WHEN state = 'running' THEN last_error ELSE %(reason)s END
WHERE job_id = ANY(%(job_ids)s::uuid[])
  AND state IN ('scheduled', 'blocked', 'pending', 'retry_wait', 'running')
  AND NOT id = ANY(%(held)s::bigint[])
RETURNING id, state, has_dependents
