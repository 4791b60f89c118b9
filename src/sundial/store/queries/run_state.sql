SELECT state FROM job_runs WHERE id = %(id)s
UNION ALL
SELECT state FROM finished_runs WHERE id = %(id)s
LIMIT 1
