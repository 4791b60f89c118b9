-- Schedule lag (started_at - run_at) of runs started in the window, live or archived.
-- An archived run that started in the window also finished in it, so the finished_at bound
-- lets PostgreSQL skip every month partition but the last (started_at has no index there).
SELECT count(*),
       percentile_cont(0.5) WITHIN GROUP (ORDER BY lag),
       percentile_cont(0.99) WITHIN GROUP (ORDER BY lag)
FROM (
    SELECT extract(epoch FROM started_at - run_at)::double precision AS lag
    FROM job_runs WHERE started_at >= now() - make_interval(secs => %(window_seconds)s::double precision)
    UNION ALL
    SELECT extract(epoch FROM started_at - run_at)::double precision
    FROM finished_runs
    WHERE finished_at >= now() - make_interval(secs => %(window_seconds)s::double precision)
      AND started_at >= now() - make_interval(secs => %(window_seconds)s::double precision)
) lags
