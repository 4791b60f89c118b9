-- The runs of these jobs that Redis may hold (pending, not a Pod's), for the trigger's Replace
-- on the hot queue: locked until the cancel commits, in id order.
SELECT id, queue
FROM job_runs
WHERE job_id = ANY(%(job_ids)s::uuid[])
  AND state = 'pending'
  AND execution_model IS DISTINCT FROM 'pod'
ORDER BY id
FOR UPDATE
