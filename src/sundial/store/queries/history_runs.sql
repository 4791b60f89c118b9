-- Runs by id, live or archived, in the shape of the mirror's window rows (archived runs keep
-- their Pod columns since migration 0060). Live runs also carry what says why they wait
-- (scheduling.waiting): queue, run_at, the count and the first three of their unfinished
-- upstream runs (a blocked run only), and the concurrency key that holds a due run back.
SELECT r.id, r.state, r.attempt, r.failure_reason, r.last_error, r.fire_time, r.started_at,
       r.finished_at, r.pod_name, r.pod_exit_code, r.pod_reason, r.failure_detail,
       r.unclaimable_reason, r.queue, r.run_at, r.pending_dependencies,
       CASE WHEN r.state = 'blocked' THEN (
           SELECT jsonb_agg(jsonb_build_array(u.id, uj.namespace || '/' || uj.name, u.state)
                            ORDER BY u.id)
           FROM (SELECT u.id, u.job_id, u.state
                 FROM job_run_deps d JOIN job_runs u ON u.id = d.depends_on
                 WHERE d.run_id = r.id AND u.finished_at IS NULL
                 ORDER BY u.id LIMIT 3) u
           JOIN job_definitions uj ON uj.id = u.job_id) END,
       CASE WHEN r.concurrency_key IS NOT NULL AND r.state IN ('scheduled', 'retry_wait')
            AND r.run_at <= now() THEN r.concurrency_key END
FROM job_runs r WHERE r.id = ANY(%(ids)s::bigint[])
UNION ALL
SELECT f.id, f.state, f.attempt, f.failure_reason, f.last_error, f.fire_time, f.started_at,
       f.finished_at, f.pod_name, f.pod_exit_code, f.pod_reason, f.failure_detail, NULL,
       f.queue, f.run_at, 0, NULL::jsonb, NULL::text
FROM finished_runs f
WHERE f.id = ANY(%(ids)s::bigint[])
  AND NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.id = f.id)
