-- Give a dead-lettered (or failed / timed-out) run a fresh retry budget (and lost-lease budget). It stays the same run,
-- and its attempt keeps growing at the next claim, so fencing tokens are never reused. A run
-- of a concurrency key waits for its key's room (promote_keyed.sql).
UPDATE job_runs
SET state = CASE WHEN concurrency_key IS NULL THEN 'pending' ELSE 'scheduled' END,
    run_at = now(),
    dispatch_key = sundial_dispatch_key(now(), priority),
    retries_used = 0,
    infra_retries_used = 0,
    oom_retries_used = 0,
    lost_leases_used = 0,
    cancel_requested = false,
    lease_owner = NULL,
    lease_until = NULL,
    finished_at = NULL
WHERE id = %(id)s AND state IN ('dead_lettered', 'failed', 'timed_out')
RETURNING id, attempt
