-- Runs by id, live or archived, in the shape of the mirror's window rows (archived runs keep
-- their Pod columns since migration 0060).
SELECT r.id, r.state, r.attempt, r.failure_reason, r.last_error, r.fire_time, r.started_at,
       r.finished_at, r.pod_name, r.pod_exit_code, r.pod_reason, r.failure_detail,
       r.unclaimable_reason
FROM job_runs r WHERE r.id = ANY(%(ids)s::bigint[])
UNION ALL
SELECT f.id, f.state, f.attempt, f.failure_reason, f.last_error, f.fire_time, f.started_at,
       f.finished_at, f.pod_name, f.pod_exit_code, f.pod_reason, f.failure_detail, NULL
FROM finished_runs f
WHERE f.id = ANY(%(ids)s::bigint[])
  AND NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.id = f.id)
