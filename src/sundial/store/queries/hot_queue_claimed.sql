-- The record of runs the hot queue's claim just handed out (sundial.store.hot_queue.dispatch),
-- as claims.claim returns them, less what Redis decided (the attempt, the lease), plus the
-- run's state: a run cancelled or ended since it was made due is given back, not run.
SELECT r.id, r.job_id, r.queue, r.handler, r.execution_model, r.args, r.timeout_seconds,
       r.schedule_id, r.fire_time, coalesce(r.idempotency_key, 'run:' || r.id) AS idempotency_key,
       r.priority, r.run_at, r.max_retries, r.retries_used, r.backoff_base_seconds,
       r.backoff_cap_seconds, r.cancel_requested, r.namespace,
       (SELECT j.dependency FROM job_definitions j WHERE j.id = r.job_id) AS dependency,
       r.state
FROM job_runs r
WHERE r.id = ANY(%(ids)s::bigint[])
