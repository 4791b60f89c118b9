-- Say why pending runs cannot be claimed, from what the live runners serve (see 0082).
--
-- Runs are grouped by (queue, handler, execution_model): a group no live runner serves gets a
-- reason, a served group gets NULL. Only rows whose reason changes are written, and a reason
-- is written only once the run has been due for %(grace_seconds)s, so a run merely waiting for a
-- free slot or for a runner that is starting is never blamed. Pod runs are the pod
-- launcher's, which does not register here.
WITH live AS (
    SELECT q.queue, h.key AS handler, h.value #>> '{}' AS model
    FROM runners rn
    CROSS JOIN LATERAL unnest(rn.queues) AS q(queue)
    CROSS JOIN LATERAL jsonb_each(rn.handlers) AS h
    WHERE rn.expires_at > now()
),
groups AS (
    SELECT DISTINCT queue, handler, execution_model
    FROM job_runs
    WHERE state = 'pending' AND execution_model IS DISTINCT FROM 'pod'
),
verdicts AS (
    SELECT g.queue, g.handler, g.execution_model,
        CASE
            WHEN NOT EXISTS (
                SELECT 1 FROM live l WHERE l.queue = g.queue AND l.handler = g.handler)
            THEN format(
                'no live runner serves handler %%s on queue %%s: start a runner with '
                '--queue %%s and --handlers naming the module that registers %%s with @sundial.job',
                g.handler, g.queue, g.queue, g.handler)
            WHEN g.execution_model IS NOT NULL AND NOT EXISTS (
                SELECT 1 FROM live l
                WHERE l.queue = g.queue AND l.handler = g.handler AND l.model = g.execution_model)
            THEN format(
                'no runner serves handler %%s with executionModel %%s: the live runners register '
                'it as %%s. Remove executionModel from the job (the registration decides) or set '
                'it to the registered model',
                g.handler, g.execution_model,
                (SELECT string_agg(DISTINCT l.model, ', ') FROM live l
                 WHERE l.queue = g.queue AND l.handler = g.handler))
        END AS reason
    FROM groups g
),
targets AS (
    SELECT r.id, v.reason
    FROM job_runs r
    JOIN verdicts v
      ON r.queue = v.queue AND r.handler = v.handler
     AND r.execution_model IS NOT DISTINCT FROM v.execution_model
    WHERE r.state = 'pending'
      AND r.unclaimable_reason IS DISTINCT FROM v.reason
      AND (v.reason IS NULL
           OR r.run_at <= now() - make_interval(secs => %(grace_seconds)s::double precision))
    LIMIT %(limit)s
    FOR UPDATE OF r SKIP LOCKED
)
UPDATE job_runs r
SET unclaimable_reason = t.reason
FROM targets t
WHERE r.id = t.id AND r.state = 'pending'
RETURNING r.id, r.job_id, r.handler, r.unclaimable_reason
