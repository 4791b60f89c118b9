-- The status mirror's window for each schedule: its unfinished runs (at most 100), then its
-- newest completed runs and its newest failed ones (failed, timed out, dead-lettered or
-- cancelled), from the hot table and the month partitions. `kind` says which part a row is.
-- Archived runs keep their Pod columns (migration 0060). Unfinished runs also carry what says
-- why they wait (scheduling.waiting, as in history_runs.sql).
SELECT q.schedule_id, w.kind, w.id, w.state, w.attempt, w.failure_reason, w.last_error,
       w.fire_time, w.started_at, w.finished_at, w.pod_name, w.pod_exit_code, w.pod_reason,
       w.failure_detail, w.unclaimable_reason, w.queue, w.run_at, w.pending_dependencies,
       w.upstream, w.held_by_key
FROM unnest(%(schedule_ids)s::uuid[], %(successful)s::int[], %(failed)s::int[])
    AS q(schedule_id, successful, failed)
CROSS JOIN LATERAL (
    (SELECT 'active' AS kind, r.id, r.state, r.attempt, r.failure_reason, r.last_error,
            r.fire_time, r.started_at, r.finished_at, r.pod_name, r.pod_exit_code, r.pod_reason,
            r.failure_detail, r.unclaimable_reason, r.queue, r.run_at, r.pending_dependencies,
            CASE WHEN r.state = 'blocked' THEN (
                  SELECT jsonb_agg(jsonb_build_array(u.id, uj.namespace || '/' || uj.name, u.state)
                                   ORDER BY u.id)
                  FROM (SELECT u.id, u.job_id, u.state
                        FROM job_run_deps d JOIN job_runs u ON u.id = d.depends_on
                        WHERE d.run_id = r.id AND u.finished_at IS NULL
                        ORDER BY u.id LIMIT 3) u
                  JOIN job_definitions uj ON uj.id = u.job_id) END AS upstream,
            CASE WHEN r.concurrency_key IS NOT NULL AND r.state IN ('scheduled', 'retry_wait')
                 AND r.run_at <= now() THEN r.concurrency_key END AS held_by_key
     FROM job_runs r
     WHERE r.schedule_id = q.schedule_id AND r.finished_at IS NULL
     ORDER BY r.id DESC
     LIMIT 100)
    UNION ALL
    (SELECT 'successful', h.id, h.state, h.attempt, h.failure_reason, h.last_error,
            h.fire_time, h.started_at, h.finished_at, h.pod_name, h.pod_exit_code, h.pod_reason,
            h.failure_detail, NULL::text, NULL::text, NULL::timestamptz, 0, NULL::jsonb,
            NULL::text
     FROM (SELECT r.id, r.state, r.attempt, r.failure_reason, r.last_error, r.fire_time,
                  r.started_at, r.finished_at, r.pod_name, r.pod_exit_code, r.pod_reason, r.failure_detail
           FROM job_runs r
           WHERE r.schedule_id = q.schedule_id AND r.finished_at IS NOT NULL
             AND r.state = 'completed'
           UNION ALL
           SELECT f.id, f.state, f.attempt, f.failure_reason, f.last_error, f.fire_time,
                  f.started_at, f.finished_at, f.pod_name, f.pod_exit_code, f.pod_reason, f.failure_detail
           FROM finished_runs f
           WHERE f.job_id = q.schedule_id AND f.schedule_id = q.schedule_id
             AND f.state = 'completed') h
     ORDER BY h.finished_at DESC, h.id DESC
     LIMIT q.successful)
    UNION ALL
    (SELECT 'failed', h.id, h.state, h.attempt, h.failure_reason, h.last_error,
            h.fire_time, h.started_at, h.finished_at, h.pod_name, h.pod_exit_code, h.pod_reason,
            h.failure_detail, NULL::text, NULL::text, NULL::timestamptz, 0, NULL::jsonb,
            NULL::text
     FROM (SELECT r.id, r.state, r.attempt, r.failure_reason, r.last_error, r.fire_time,
                  r.started_at, r.finished_at, r.pod_name, r.pod_exit_code, r.pod_reason, r.failure_detail
           FROM job_runs r
           WHERE r.schedule_id = q.schedule_id AND r.finished_at IS NOT NULL
             AND r.state <> 'completed'
           UNION ALL
           SELECT f.id, f.state, f.attempt, f.failure_reason, f.last_error, f.fire_time,
                  f.started_at, f.finished_at, f.pod_name, f.pod_exit_code, f.pod_reason, f.failure_detail
           FROM finished_runs f
           WHERE f.job_id = q.schedule_id AND f.schedule_id = q.schedule_id
             AND f.state <> 'completed') h
     ORDER BY h.finished_at DESC, h.id DESC
     LIMIT q.failed)
) w
