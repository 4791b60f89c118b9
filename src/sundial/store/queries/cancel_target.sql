-- The run runs.cancel is about to cancel on the hot queue, locked until the cancel commits:
-- its queue (the Redis keys it is under) and whether Redis may hold it (pending, not a Pod's).
SELECT queue, state = 'pending' AND execution_model IS DISTINCT FROM 'pod'
FROM job_runs
WHERE id = %(id)s
FOR UPDATE
