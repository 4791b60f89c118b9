-- Telling why runs wait no longer reads the whole backlog (queries/mark_unclaimable_runs.sql).
--
-- The statement grouped every pending run by (queue, handler, execution_model) on each
-- maintainer pass: 5.2 s a call at 250,000 pending runs, measured at twice the design's peak,
-- where it deepened the overload it ran in. It now reads the runs due longest, in the claim's
-- order, and the runs that already have a reason. This index finds the latter: it holds only
-- pending runs with a reason, so it is empty while every run is servable, and a claim or a
-- finish that leaves the reason NULL adds nothing to it.
--
-- CREATE INDEX (not CONCURRENTLY: a migration is one transaction) blocks writes to job_runs
-- while it reads it once.
CREATE INDEX job_runs_unclaimable_idx ON job_runs (queue, handler)
    WHERE state = 'pending' AND unclaimable_reason IS NOT NULL;
