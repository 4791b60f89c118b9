-- The pod runs a previous launcher (%(previous)s) still holds become this launcher's
-- (%(worker)s), under the same attempt: it adopts their Pods as after its own restart. Only
-- a leader calls it, once the previous one has stopped or lost the lease; a run the reaper
-- requeued first is no longer running and is left alone.
UPDATE job_runs
SET lease_owner = %(worker)s
WHERE state = 'running'
  AND lease_owner = %(previous)s
  AND execution_model = 'pod'
RETURNING id
