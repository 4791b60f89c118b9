-- Active runs per job, for the concurrency policy (Forbid / Replace).
SELECT job_id, count(*)
FROM job_runs
WHERE job_id = ANY(%(job_ids)s::uuid[])
  AND state IN ('scheduled', 'blocked', 'pending', 'running', 'retry_wait')
GROUP BY job_id
