-- Schedule lag (started_at - run_at) of runs started in the window, live or archived.
SELECT count(*),
       percentile_cont(0.5) WITHIN GROUP (ORDER BY lag),
       percentile_cont(0.99) WITHIN GROUP (ORDER BY lag)
FROM (
    SELECT extract(epoch FROM started_at - run_at)::double precision AS lag
    FROM job_runs WHERE started_at >= now() - make_interval(secs => %(window_seconds)s::double precision)
    UNION ALL
    SELECT extract(epoch FROM started_at - run_at)::double precision
    FROM finished_runs WHERE started_at >= now() - make_interval(secs => %(window_seconds)s::double precision)
) lags
