-- Future-dated and backing-off runs that are now due join the dispatch index (runs of a
-- concurrency key: promote_keyed.sql).
--
-- The picked ids go to the UPDATE as an array (id = ANY(ARRAY(...))), as in claim.sql, not as
-- a subquery joined on id: with statistics that count many waiting runs (a top-of-the-hour
-- burst of fires, analyzed while it waits) the planner estimates the join at %(limit)s rows
-- and hashes the whole hot table against it, a sequential scan of every live and recently
-- finished run per pass. The array form is a primary-key probe per promoted run, whatever the
-- statistics say (tests/integration/store/test_stable_plans.py checks the plan).
UPDATE job_runs r
SET state = 'pending',
    dispatch_key = sundial_dispatch_key(r.run_at, r.priority)
WHERE r.id = ANY(ARRAY(
    SELECT id FROM job_runs
    WHERE state IN ('scheduled', 'retry_wait') AND run_at <= now() AND concurrency_key IS NULL
    ORDER BY run_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
))
