-- The schedules of ScheduledJobs that no longer exist: active, in the namespaces the LIST
-- covered (%(namespaces)s; NULL: all), stored before the LIST began (%(listed_at)s, the
-- database's clock), and not among the objects it returned (%(kept)s). Deleted while no
-- operator watched (a finalizer removed by hand, an object deleted before its finalizer was
-- added): no deletion event will ever come, and they would fire for ever and hold their
-- names. Deactivated as schedule_deactivate does; runs and fire keys stay.
WITH orphan AS (
    UPDATE schedules s SET active = false, updated_at = now()
    FROM job_definitions j
    WHERE j.id = s.job_id
      AND s.active
      AND j.created_at < %(listed_at)s
      AND s.id <> ALL(%(kept)s::uuid[])
      AND (%(namespaces)s::text[] IS NULL OR j.namespace = ANY(%(namespaces)s::text[]))
    RETURNING s.id, s.job_id, j.namespace, j.name
),
job AS (
    UPDATE job_definitions j SET active = false, updated_at = now()
    FROM orphan o WHERE j.id = o.job_id
)
SELECT id, namespace, name FROM orphan ORDER BY namespace, name
