SELECT job_id, state, count(*)
FROM all_runs
WHERE finished_at >= now() - make_interval(secs => %(window_seconds)s::double precision)
GROUP BY job_id, state
ORDER BY job_id, state
