-- Future-dated and backing-off runs that are now due join the dispatch index.
UPDATE job_runs r
SET state = 'pending',
    dispatch_key = sundial_dispatch_key(r.run_at, r.priority)
FROM (
    SELECT id FROM job_runs
    WHERE state IN ('scheduled', 'retry_wait') AND run_at <= now()
    ORDER BY run_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
) due
WHERE r.id = due.id
