SELECT id, job_id, state, attempt, priority, run_at, retries_used, lease_owner, lease_until,
       cancel_requested, failure_reason, last_error, pending_dependencies, fire_time,
       schedule_id, idempotency_key, args, started_at, finished_at, false AS archived,
       failure_detail, queue
FROM job_runs WHERE id = %(id)s
UNION ALL
SELECT id, job_id, state, attempt, priority, run_at, retries_used, lease_owner, NULL,
       false, failure_reason, last_error, 0, fire_time,
       schedule_id, idempotency_key, args, started_at, finished_at, true,
       failure_detail, queue
FROM finished_runs WHERE id = %(id)s
LIMIT 1
