-- Every stored quota, the default ('*') first, with its active runs twice: as counted (what
-- the next insert is checked against: every insert since the last maintenance pass added, no
-- end subtracted) and as they are now. The default row has no runs of its own.
SELECT q.namespace, q.max_active_runs, q.active_runs, q.explicit, q.counted_at,
       CASE WHEN q.namespace = '*' THEN NULL ELSE (
           SELECT count(*) FROM job_runs r
           WHERE r.namespace = q.namespace
             AND r.state IN ('scheduled', 'blocked', 'pending', 'running', 'retry_wait')
       ) END AS active_now
FROM namespace_quotas q
ORDER BY q.namespace <> '*', q.namespace
