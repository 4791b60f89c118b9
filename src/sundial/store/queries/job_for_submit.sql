-- The active job a submission names, by id or by namespace/name.
SELECT id, queue, handler, execution_model, priority, timeout_seconds, max_retries,
       backoff_base_seconds, backoff_cap_seconds, oom_max_retries, max_lost_leases
FROM job_definitions
WHERE active
  AND (id = %(job_id)s::uuid OR (namespace = %(namespace)s AND name = %(name)s))
LIMIT 1
