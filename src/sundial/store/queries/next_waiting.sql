-- Seconds from the database's now() until the earliest waiting run that is not due yet comes
-- due; NULL when none waits. Only runs after now(): the front of job_runs_waiting_idx holds
-- the entries of runs promoted since the last vacuum (due, dead to the index's predicate), and
-- a scan from the front would step over each of them; from now() on it is one index step.
SELECT extract(epoch FROM min(run_at) - now())::double precision
FROM job_runs
WHERE state IN ('scheduled', 'retry_wait') AND run_at > now()
