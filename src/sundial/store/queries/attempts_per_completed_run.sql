SELECT attempt, count(*)
FROM all_runs
WHERE state = 'completed'
  AND finished_at >= now() - make_interval(secs => %(window_seconds)s::double precision)
GROUP BY attempt
ORDER BY attempt
