-- The generation stored for a ScheduledJob's job, and whether its schedule is quarantined,
-- locked for the upsert that follows: a newer generation lifts a quarantine (a spec change is
-- what a person does to fix a job that kept failing; docs/failure-modes.md).
-- NO KEY UPDATE, not UPDATE: it serialises upserts of one job, and never blocks the KEY SHARE
-- lock a new run's foreign key takes. The trigger holds the schedule's row while it inserts
-- the runs of a fire, and this upsert writes that row next, so a plain FOR UPDATE here
-- deadlocked the two (tests/integration/trigger/test_trigger_beside_an_upsert.py).
SELECT j.generation, coalesce(s.quarantined, false)
FROM job_definitions j
LEFT JOIN schedules s ON s.id = j.id
WHERE j.id = %(id)s
FOR NO KEY UPDATE OF j
