-- The newest runs, live and archived, optionally of one job (namespace and name), for
-- `sundial runs`. Inline JobRun jobs show as their namespace and `jobrun:<uid>`. Pod runs show
-- the Pod of their latest attempt, archived or not (migration 0060); pending runs no live
-- runner can claim, why (migration 0082).
SELECT h.id, j.namespace, j.name, h.state, h.attempt, h.fire_time, h.started_at,
       h.finished_at, h.failure_reason, h.pod_name, h.pod_exit_code, h.pod_reason,
       h.failure_detail, h.unclaimable_reason
FROM (
    SELECT id, job_id, state, attempt, fire_time, started_at, finished_at, failure_reason,
           pod_name, pod_exit_code, pod_reason, failure_detail, unclaimable_reason
    FROM job_runs
    UNION ALL
    SELECT id, job_id, state, attempt, fire_time, started_at, finished_at, failure_reason,
           pod_name, pod_exit_code, pod_reason, failure_detail, NULL AS unclaimable_reason
    FROM finished_runs
) h
JOIN job_definitions j ON j.id = h.job_id
WHERE (%(namespace)s::text IS NULL OR j.namespace = %(namespace)s)
  AND (%(name)s::text IS NULL OR j.name = %(name)s)
ORDER BY h.id DESC
LIMIT %(limit)s
