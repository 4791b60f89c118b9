-- The ScheduledJob is gone: no more fires, and its name is free for a new object. Runs and
-- fire keys stay (history, and no fire is ever repeated).
WITH schedule AS (
    UPDATE schedules SET active = false, updated_at = now()
    WHERE id = %(id)s
    RETURNING job_id
)
UPDATE job_definitions j SET active = false, updated_at = now()
FROM schedule WHERE j.id = schedule.job_id
RETURNING j.id
