-- Record the Pod of an attempt (its name and UID when created, its exit code and reason when
-- it ends), fenced like a heartbeat: only the lease holder's current attempt is written.
UPDATE job_runs
SET pod_name = %(pod_name)s,
    pod_uid = %(pod_uid)s,
    pod_exit_code = %(exit_code)s,
    pod_reason = %(reason)s
WHERE id = %(id)s
  AND attempt = %(attempt)s
  AND lease_owner = %(worker)s
  AND state = 'running'
RETURNING id
