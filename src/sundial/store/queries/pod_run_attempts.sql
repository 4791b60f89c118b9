-- The current attempt of runs that have Pods, to tell a current Pod from a stale one. A run
-- that is not in the hot table (archived) has no current attempt.
SELECT id, state, attempt, lease_owner
FROM job_runs
WHERE id = ANY(%(ids)s::bigint[])
