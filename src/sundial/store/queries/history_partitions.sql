-- Every month partition of the history tables, by name (for tests and the benchmark).
SELECT c.relname
FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent IN ('finished_runs'::regclass, 'job_run_attempts'::regclass)
ORDER BY c.relname
