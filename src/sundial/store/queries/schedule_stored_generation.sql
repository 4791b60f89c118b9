-- The generation stored for a ScheduledJob's job, and whether its schedule is quarantined,
-- locked for the upsert that follows: a newer generation lifts a quarantine (a spec change is
-- what a person does to fix a job that kept failing; docs/failure-modes.md).
SELECT j.generation, coalesce(s.quarantined, false)
FROM job_definitions j
LEFT JOIN schedules s ON s.id = j.id
WHERE j.id = %(id)s
FOR UPDATE OF j
