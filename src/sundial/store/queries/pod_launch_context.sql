-- What the pod launcher needs besides the claimed run: the job's Pod template, namespace and
-- failure policy, start timeout, OOM memory bump, what a Pod deleted by someone else does, and
-- how many earlier attempts of the run were OOMKilled (the memory bump's exponent).
SELECT r.id, j.namespace, j.name, j.pod_template, j.failure_policy, j.start_timeout_seconds,
       j.oom_memory_increase_percent, j.oom_max_memory_bytes, j.pod_deletion_policy,
       (SELECT count(*) FROM job_run_attempts a
        WHERE a.run_id = r.id AND a.failure_reason = 'oom')::int AS oom_kills
FROM job_runs r
JOIN job_definitions j ON j.id = r.job_id
WHERE r.id = ANY(%(ids)s::bigint[])
