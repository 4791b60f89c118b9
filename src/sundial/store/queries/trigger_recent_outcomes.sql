-- The newest ended runs of each quarantine-watched schedule, newest first, for the failure
-- streak. Cancelled runs are neither success nor failure; runs at or below the schedule's
-- watermark were counted before the quarantine was last cleared.
SELECT q.schedule_id, recent.id, recent.state
FROM unnest(%(schedule_ids)s::uuid[], %(job_ids)s::uuid[], %(after_ids)s::bigint[],
            %(limits)s::int[]) AS q(schedule_id, job_id, after_id, n)
CROSS JOIN LATERAL (
    SELECT r.id, r.state
    FROM job_runs r
    WHERE r.job_id = q.job_id
      AND r.schedule_id = q.schedule_id
      AND r.id > q.after_id
      AND r.state IN ('completed', 'failed', 'timed_out', 'dead_lettered')
    ORDER BY r.id DESC
    LIMIT q.n
) recent
ORDER BY q.schedule_id, recent.id DESC
