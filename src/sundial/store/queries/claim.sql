-- Claim up to %(limit)s due runs in one statement. SKIP LOCKED lets many workers poll without
-- blocking each other; dispatch_key orders by priority with aging (see 0002_runs.sql).
--
-- The picked ids go to the UPDATE as an array (id = ANY(ARRAY(...))), not as a CTE joined on
-- id: with a join the planner estimates the CTE at %(limit)s rows and hashes the whole hot
-- table (a sequential scan of every live and recently finished run, per claim: about half
-- of a 500-run claim's time at 20,000 rows). The array form is a primary-key probe per picked
-- run, whatever the table's size (docs/adr/0012-runner-hot-path.md).
--
-- %(namespaces)s (NULL: all) keeps a runner to the namespaces it serves (migration 0200).
--
-- A run whose execution_model is NULL takes its model from the handler's registration
-- (migration 0080): %(unset_model)s says the claimer registers the named handlers under the
-- models it asks for, so it may take such runs (a runner does; the pod launcher does not).
WITH claimed AS (
UPDATE job_runs r
SET state = 'running',
    lease_owner = %(worker)s,
    lease_until = now() + make_interval(secs => %(lease_seconds)s::double precision),
    attempt = r.attempt + 1,
    started_at = now(),
    unclaimable_reason = NULL
WHERE r.id = ANY(ARRAY(
    SELECT id FROM job_runs
    WHERE state = 'pending'
      AND run_at <= now()
      AND queue = ANY(%(queues)s::text[])
      AND (%(namespaces)s::text[] IS NULL OR namespace = ANY(%(namespaces)s::text[]))
      AND (%(handlers)s::text[] IS NULL OR handler = ANY(%(handlers)s::text[]))
      AND (%(execution_models)s::text[] IS NULL
           OR execution_model = ANY(%(execution_models)s::text[])
           OR (execution_model IS NULL AND %(unset_model)s::boolean))
    ORDER BY dispatch_key
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
))
RETURNING r.id, r.attempt, r.job_id, r.queue, r.handler, r.execution_model, r.args,
          r.timeout_seconds, r.schedule_id, r.fire_time,
          coalesce(r.idempotency_key, 'run:' || r.id) AS idempotency_key, r.lease_until,
          r.priority, r.run_at, r.max_retries, r.retries_used, r.backoff_base_seconds,
          r.backoff_cap_seconds, r.cancel_requested, r.namespace, r.dispatch_key
)
-- Handed back in claim order (the probe above returns them in id order).
SELECT id, attempt, job_id, queue, handler, execution_model, args, timeout_seconds,
       schedule_id, fire_time, idempotency_key, lease_until, priority, run_at, max_retries,
       retries_used, backoff_base_seconds, backoff_cap_seconds, cancel_requested, namespace
FROM claimed
ORDER BY dispatch_key, id
