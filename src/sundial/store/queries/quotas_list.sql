-- Every stored quota, the default ('*') first.
SELECT namespace, max_active_runs, active_runs, explicit
FROM namespace_quotas
ORDER BY namespace <> '*', namespace
