-- Month partitions of the history tables whose whole month ends on or before the cutoff,
-- oldest first. Names are finished_runs_YYYYMM / job_run_attempts_YYYYMM
-- (sundial_ensure_month_partition); anything else attached by hand is never listed.
SELECT c.relname, p.relname AS parent
FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
JOIN pg_class p ON p.oid = i.inhparent
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE p.relname IN ('finished_runs', 'job_run_attempts')
  AND n.nspname = current_schema()
  AND c.relname ~ '^(finished_runs|job_run_attempts)_[0-9]{6}$'
  AND ((to_date(right(c.relname, 6), 'YYYYMM') + interval '1 month')::timestamp
       AT TIME ZONE 'UTC') <= %(cutoff)s
ORDER BY right(c.relname, 6), c.relname
LIMIT %(limit)s
