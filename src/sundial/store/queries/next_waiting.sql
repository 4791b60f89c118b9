-- Seconds from the database's now() until the earliest waiting run comes due (negative when
-- one is due already); NULL when none waits. One step into job_runs_waiting_idx.
SELECT extract(epoch FROM min(run_at) - now())::double precision
FROM job_runs
WHERE state IN ('scheduled', 'retry_wait')
