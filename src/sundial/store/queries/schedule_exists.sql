-- Whether a job definition is a ScheduledJob's (it has a schedule) rather than one defined
-- from Python: asked only when another active job holds the name a ScheduledJob wants.
SELECT EXISTS (SELECT 1 FROM schedules WHERE id = %(id)s)
