UPDATE job_runs SET has_dependents = true
WHERE id = ANY(%(ids)s::bigint[]) AND NOT has_dependents
