-- Attempts that failed in the window, by failure reason (exception, timeout, lease_expired,
-- oom_killed ...): what fails, across every runner and the pod launcher.
SELECT failure_reason, count(*)
FROM job_run_attempts
WHERE failure_reason IS NOT NULL
  AND ended_at >= now() - make_interval(secs => %(window_seconds)s::double precision)
GROUP BY failure_reason
ORDER BY failure_reason
