-- Runs that ended in the window, live or archived, by their job's namespace and name and by
-- finished state: the error rate and dead letters per job, for the maintainer's gauges.
SELECT d.namespace, d.name, r.state, count(*)
FROM all_runs r
JOIN job_definitions d ON d.id = r.job_id
WHERE r.finished_at >= now() - make_interval(secs => %(window_seconds)s::double precision)
GROUP BY d.namespace, d.name, r.state
ORDER BY d.namespace, d.name, r.state
