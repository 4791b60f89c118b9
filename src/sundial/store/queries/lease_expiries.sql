SELECT count(*) FROM job_run_attempts
WHERE failure_reason = 'lease_expired'
  AND ended_at >= now() - make_interval(secs => %(window_seconds)s::double precision)
