INSERT INTO job_run_deps (run_id, depends_on)
SELECT %(run_id)s, unnest(%(depends_on)s::bigint[])
