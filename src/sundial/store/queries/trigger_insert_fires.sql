-- Create the runs of a batch of fires in one statement. Each fire first takes its key in
-- schedule_fires (which outlives run retention); a fire whose key exists already - another
-- trigger loop, or a retry of this one - inserts nothing. A run due later waits in
-- 'scheduled' until reaper.promote_due moves it to 'pending', as runs.submit does; so does a
-- run of a concurrency key, until its key has room (promote_keyed.sql). The
-- dispatch key is written on entry, as insert_run.sql does (migration 0005).
WITH planned AS (
    SELECT * FROM unnest(%(schedule_ids)s::uuid[], %(job_ids)s::uuid[],
                         %(fire_times)s::timestamptz[], %(run_ats)s::timestamptz[])
        AS p(schedule_id, job_id, fire_time, run_at)
), reserved AS (
    INSERT INTO schedule_fires (schedule_id, fire_time, run_id)
    SELECT schedule_id, fire_time, nextval(pg_get_serial_sequence('job_runs', 'id'))
    FROM planned
    ORDER BY schedule_id, fire_time
    ON CONFLICT (schedule_id, fire_time) DO NOTHING
    RETURNING schedule_id, fire_time, run_id
)
INSERT INTO job_runs (
    id, job_id, schedule_id, fire_time, queue, handler, execution_model, timeout_seconds,
    max_retries, backoff_base_seconds, backoff_cap_seconds, oom_max_retries, max_lost_leases,
    state, priority, run_at, dispatch_key, args, namespace, concurrency_key)
SELECT r.run_id, j.id, r.schedule_id, r.fire_time, j.queue, j.handler, j.execution_model,
       j.timeout_seconds, j.max_retries, j.backoff_base_seconds, j.backoff_cap_seconds,
       j.oom_max_retries, j.max_lost_leases,
       CASE WHEN p.run_at > now() OR j.concurrency_key IS NOT NULL THEN 'scheduled'
            ELSE 'pending' END,
       j.priority, p.run_at, sundial_dispatch_key(p.run_at, j.priority), s.run_args,
       j.namespace, j.concurrency_key
FROM reserved r
JOIN planned p ON p.schedule_id = r.schedule_id AND p.fire_time = r.fire_time
JOIN job_definitions j ON j.id = p.job_id
JOIN schedules s ON s.id = r.schedule_id
RETURNING id, schedule_id, fire_time, run_at, state
