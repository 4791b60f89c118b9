-- Claim up to %(limit)s due runs in one statement. SKIP LOCKED lets many workers poll without
-- blocking each other; dispatch_key orders by priority with aging (see 0002_runs.sql).
WITH picked AS (
    SELECT id FROM job_runs
    WHERE state = 'pending'
      AND run_at <= now()
      AND queue = ANY(%(queues)s::text[])
      AND (%(handlers)s::text[] IS NULL OR handler = ANY(%(handlers)s::text[]))
      AND (%(execution_models)s::text[] IS NULL OR execution_model = ANY(%(execution_models)s::text[]))
    ORDER BY dispatch_key
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE job_runs r
SET state = 'running',
    lease_owner = %(worker)s,
    lease_until = now() + make_interval(secs => %(lease_seconds)s::double precision),
    attempt = r.attempt + 1,
    started_at = now()
FROM picked
WHERE r.id = picked.id
RETURNING r.id, r.attempt, r.job_id, r.queue, r.handler, r.execution_model, r.args,
          r.timeout_seconds, r.schedule_id, r.fire_time,
          coalesce(r.idempotency_key, 'run:' || r.id), r.lease_until, r.priority, r.run_at,
          r.max_retries, r.retries_used, r.backoff_base_seconds, r.backoff_cap_seconds,
          r.cancel_requested
