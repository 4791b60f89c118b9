-- How many unfinished runs each schedule has, for the schedules whose window listed the most
-- it lists (history_window's LIMIT 100): activeCount stays exact beyond the listed runs.
-- Served by job_runs_unfinished_by_schedule_idx.
SELECT r.schedule_id, count(*)
FROM job_runs r
WHERE r.schedule_id = ANY(%(schedule_ids)s::uuid[]) AND r.finished_at IS NULL
GROUP BY r.schedule_id
