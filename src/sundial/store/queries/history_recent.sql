-- The newest runs, live and archived, optionally of one job (namespace and name), for
-- `sundial runs`. Inline JobRun jobs show as their namespace and `jobrun:<uid>`. Pod runs show
-- the Pod of their latest attempt, archived or not (migration 0060); pending runs no live
-- runner can claim, why (migration 0082); unfinished runs, what says why they wait
-- (scheduling.waiting, as in history_runs.sql). `before` pages back: only runs with a smaller
-- id (the last id of the previous page). `states`: only runs in one of these states;
-- `since`: only runs created at or after it (an archived run finished after it was created,
-- so its month partitions before `since` are pruned). `ids`: only these runs, live ones (the
-- runs the hot queue's Redis holds, which the record has pending; archived runs are left out).
-- `held`: not these live runs (the runs Redis holds, left out of a listing of pending runs).
SELECT h.id, j.namespace, j.name, h.state, h.attempt, h.fire_time, h.started_at,
       h.finished_at, h.failure_reason, h.pod_name, h.pod_exit_code, h.pod_reason,
       h.failure_detail, h.unclaimable_reason, h.created_at, h.queue, h.run_at, h.last_error,
       h.pending_dependencies,
       CASE WHEN h.state = 'blocked' THEN (
           SELECT jsonb_agg(jsonb_build_array(u.id, uj.namespace || '/' || uj.name, u.state)
                            ORDER BY u.id)
           FROM (SELECT u.id, u.job_id, u.state
                 FROM job_run_deps d JOIN job_runs u ON u.id = d.depends_on
                 WHERE d.run_id = h.id AND u.finished_at IS NULL
                 ORDER BY u.id LIMIT 3) u
           JOIN job_definitions uj ON uj.id = u.job_id) END,
       CASE WHEN h.concurrency_key IS NOT NULL AND h.state IN ('scheduled', 'retry_wait')
            AND h.run_at <= now() THEN h.concurrency_key END
FROM (
    SELECT id, job_id, state, attempt, fire_time, started_at, finished_at, failure_reason,
           pod_name, pod_exit_code, pod_reason, failure_detail, unclaimable_reason, created_at,
           queue, run_at, last_error, pending_dependencies, concurrency_key
    FROM job_runs
    WHERE (%(states)s::text[] IS NULL OR state = ANY(%(states)s::text[]))
      AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
      AND (%(ids)s::bigint[] IS NULL OR id = ANY(%(ids)s::bigint[]))
      AND (%(held)s::bigint[] IS NULL OR NOT id = ANY(%(held)s::bigint[]))
    UNION ALL
    SELECT id, job_id, state, attempt, fire_time, started_at, finished_at, failure_reason,
           pod_name, pod_exit_code, pod_reason, failure_detail, NULL AS unclaimable_reason,
           created_at, queue, run_at, last_error, 0 AS pending_dependencies,
           NULL AS concurrency_key
    FROM finished_runs
    WHERE (%(states)s::text[] IS NULL OR state = ANY(%(states)s::text[]))
      AND (%(since)s::timestamptz IS NULL
           OR (created_at >= %(since)s AND finished_at >= %(since)s))
      AND %(ids)s::bigint[] IS NULL
) h
JOIN job_definitions j ON j.id = h.job_id
WHERE (%(namespace)s::text IS NULL OR j.namespace = %(namespace)s)
  AND (%(name)s::text IS NULL OR j.name = %(name)s)
  AND (%(before)s::bigint IS NULL OR h.id < %(before)s)
ORDER BY h.id DESC
LIMIT %(limit)s
