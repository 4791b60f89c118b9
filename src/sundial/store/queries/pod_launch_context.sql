-- What the pod launcher needs besides the claimed run: the job's Pod template, namespace and
-- failure policy, and how many earlier attempts of the run were OOMKilled (the memory bump).
SELECT r.id, j.namespace, j.name, j.pod_template, j.failure_policy, j.start_timeout_seconds,
       (SELECT count(*) FROM job_run_attempts a
        WHERE a.run_id = r.id AND a.failure_reason = 'oom')::int AS oom_kills
FROM job_runs r
JOIN job_definitions j ON j.id = r.job_id
WHERE r.id = ANY(%(ids)s::bigint[])
