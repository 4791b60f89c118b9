-- Say why pending runs cannot be claimed, from what the live runners serve (see 0082).
--
-- Runs are grouped by (queue, handler, execution_model, namespace): a group no live runner
-- serves gets a reason, a served group gets NULL. A runner serves the namespaces it announced
-- (NULL: every one; migration 0200). A verdict reads only the runners that serve the group's
-- namespace: a login kept to namespaces sees no other runner (migration 0330), and its
-- maintenance pass and the maintainer's must write the same reason (or they would rewrite
-- each other's), which must not tell a team what other teams' runners serve. Only rows
-- whose reason changes are written, and a reason is written only once the run has been due
-- for %(grace_seconds)s, so a run merely waiting for a free slot or for a runner that is
-- starting is never blamed. Pod runs are the pod
-- launcher's, which does not register here.
--
-- Bounded (migration 0190): the runs looked at are never the whole backlog, only
-- * the %(scan)s runs without a reason that are due longest, in the claim's order
--   (job_runs_dispatch_idx). A run nobody can claim is never claimed, so it stays in that
--   order while the runs before it leave: it is blamed once fewer than %(scan)s unblamed runs
--   are before it. A deep backlog of claimable runs is read at its head only;
-- * the runs that have a reason (job_runs_unclaimable_idx, empty while every run is
--   servable): a reason may have to change or go.
-- The rows to write are then locked by primary key (ANY(ARRAY(...)), as the claim does), so
-- the update never plans a join over the hot table. runners.mark_unclaimable runs it with JIT
-- off: the estimate of the live announcements puts its cost past jit_above_cost, and compiling
-- took 0.7 s of a call that runs in 4 ms.
WITH live AS (
    SELECT q.queue, h.key AS handler, h.value #>> '{}' AS model, rn.namespaces
    FROM runners rn
    CROSS JOIN LATERAL unnest(rn.queues) AS q(queue)
    CROSS JOIN LATERAL jsonb_each(rn.handlers) AS h
    WHERE rn.expires_at > now()
),
candidates AS (
    (SELECT id, queue, handler, execution_model, namespace, unclaimable_reason, run_at
     FROM job_runs
     WHERE state = 'pending' AND unclaimable_reason IS NULL
       AND execution_model IS DISTINCT FROM 'pod'
       AND run_at <= now() - make_interval(secs => %(grace_seconds)s::double precision)
     ORDER BY dispatch_key
     LIMIT %(scan)s)
    UNION ALL
    SELECT id, queue, handler, execution_model, namespace, unclaimable_reason, run_at
    FROM job_runs
    WHERE state = 'pending' AND unclaimable_reason IS NOT NULL
      AND execution_model IS DISTINCT FROM 'pod'
),
groups AS (
    SELECT DISTINCT queue, handler, execution_model, namespace FROM candidates
),
-- Materialized: one verdict per group, not one per candidate run (4.0 ms against 5.7 at 250,000
-- pending runs).
verdicts AS MATERIALIZED (
    SELECT g.queue, g.handler, g.execution_model, g.namespace,
        CASE
            WHEN g.namespace IS NULL AND NOT EXISTS (
                SELECT 1 FROM live l
                WHERE l.queue = g.queue AND l.handler = g.handler AND l.namespaces IS NULL)
            THEN format(
                'no live runner serves handler %%s on queue %%s: start a runner with '
                '--queue %%s and --handlers naming the module that registers %%s with @sundial.job',
                g.handler, g.queue, g.queue, g.handler)
            WHEN NOT EXISTS (
                SELECT 1 FROM live l
                WHERE l.queue = g.queue AND l.handler = g.handler
                  AND (l.namespaces IS NULL OR g.namespace = ANY(l.namespaces)))
            THEN format(
                'no live runner serves handler %%s on queue %%s in namespace %%s: start a runner '
                'with --queue %%s, --handlers naming the module that registers %%s with '
                '@sundial.job, and --namespace %%s or none (the chart: runner.namespaces)',
                g.handler, g.queue, g.namespace, g.queue, g.handler, g.namespace)
            WHEN g.execution_model IS NOT NULL AND NOT EXISTS (
                SELECT 1 FROM live l
                WHERE l.queue = g.queue AND l.handler = g.handler AND l.model = g.execution_model
                  AND (l.namespaces IS NULL OR g.namespace = ANY(l.namespaces)))
            THEN format(
                'no runner serves handler %%s with executionModel %%s: the live runners register '
                'it as %%s. Remove executionModel from the job (the registration decides) or set '
                'it to the registered model',
                g.handler, g.execution_model,
                (SELECT string_agg(DISTINCT l.model, ', ') FROM live l
                 WHERE l.queue = g.queue AND l.handler = g.handler
                   AND (l.namespaces IS NULL OR g.namespace = ANY(l.namespaces))))
        END AS reason
    FROM groups g
),
targets AS (
    SELECT c.id, v.reason
    FROM candidates c
    JOIN verdicts v
      ON c.queue = v.queue AND c.handler = v.handler
     AND c.execution_model IS NOT DISTINCT FROM v.execution_model
     AND c.namespace IS NOT DISTINCT FROM v.namespace
    WHERE c.unclaimable_reason IS DISTINCT FROM v.reason
      AND (v.reason IS NULL
           OR c.run_at <= now() - make_interval(secs => %(grace_seconds)s::double precision))
    LIMIT %(limit)s
),
locked AS (
    SELECT id FROM job_runs
    WHERE id = ANY(ARRAY(SELECT id FROM targets)) AND state = 'pending'
    FOR UPDATE SKIP LOCKED
)
UPDATE job_runs r
SET unclaimable_reason = t.reason
FROM targets t
WHERE r.id = ANY(ARRAY(SELECT id FROM locked)) AND r.id = t.id AND r.state = 'pending'
RETURNING r.id, r.job_id, r.handler, r.unclaimable_reason
