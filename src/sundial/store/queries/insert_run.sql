INSERT INTO job_runs (
    id, job_id, schedule_id, fire_time, idempotency_key, queue, handler, execution_model,
    timeout_seconds, max_retries, backoff_base_seconds, backoff_cap_seconds, oom_max_retries,
    max_lost_leases, state, priority, run_at, dispatch_key, args, pending_dependencies,
    failure_reason, last_error, finished_at, namespace, concurrency_key)
SELECT
    coalesce(%(run_id)s, nextval(pg_get_serial_sequence('job_runs', 'id'))),
    %(job_id)s, %(schedule_id)s, %(fire_time)s, %(idempotency_key)s, %(queue)s, %(handler)s,
    %(execution_model)s, %(timeout_seconds)s, %(max_retries)s, %(backoff_base_seconds)s,
    %(backoff_cap_seconds)s, %(oom_max_retries)s, %(max_lost_leases)s,
    CASE
        WHEN %(doomed_state)s::text IS NOT NULL THEN %(doomed_state)s::text
        WHEN %(pending_dependencies)s::int > 0 THEN 'blocked'
        WHEN t.run_at > now() OR j.concurrency_key IS NOT NULL THEN 'scheduled'
        ELSE 'pending'
    END,
    %(priority)s, t.run_at, sundial_dispatch_key(t.run_at, %(priority)s::smallint), %(args)s,
    %(pending_dependencies)s,
    %(failure_reason)s, %(last_error)s,
    CASE WHEN %(doomed_state)s::text IS NOT NULL THEN now() END,
    j.namespace, j.concurrency_key
FROM (SELECT coalesce(%(run_at)s::timestamptz,
                      now() + make_interval(secs => %(delay_seconds)s::double precision)) AS run_at) t
LEFT JOIN job_definitions j ON j.id = %(job_id)s
RETURNING id, state
