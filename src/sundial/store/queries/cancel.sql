-- Cancel one run: one that has not started ends now; a running one gets the flag its
-- worker's next heartbeat returns, and keeps the reason for that worker's cancelled end
-- (migration 0070). A finished run is left alone (no row returned).
UPDATE job_runs
SET cancel_requested = true,
    cancel_reason = %(reason)s,
    state = CASE WHEN state = 'running' THEN state ELSE 'cancelled' END,
    finished_at = CASE WHEN state = 'running' THEN finished_at ELSE now() END,
    failure_reason = CASE WHEN state = 'running' THEN failure_reason ELSE 'cancelled' END,
    failure_detail = CASE WHEN state = 'running' THEN failure_detail END,
    last_error = CASE WHEN state = 'running' THEN last_error ELSE %(reason)s END
WHERE id = %(id)s
  AND state IN ('scheduled', 'blocked', 'pending', 'retry_wait', 'running')
RETURNING state, has_dependents
