-- Seconds until the earliest scheduled or backing-off run is due, by the database's clock (as
-- promote_due.sql compares run_at with now()); NULL when none waits. The maintainer wakes its
-- promotion then, not only at its interval. min() over the waiting partial index is its first
-- entry (job_runs_waiting_idx, migration 0002), whatever the size of the hot table.
SELECT extract(epoch FROM min(run_at) - now())::float8
FROM job_runs
WHERE state IN ('scheduled', 'retry_wait')
