-- Pod runs this worker still holds (after a restart with the same worker id), in the shape
-- of a claim so the launcher can adopt their Pods and finish them, then the Pod name last
-- recorded on the run and its UID (written after the Pod's create succeeded; an earlier
-- attempt's until the current attempt's Pod is recorded).
SELECT r.id, r.attempt, r.job_id, r.queue, r.handler, r.execution_model, r.args,
       r.timeout_seconds, r.schedule_id, r.fire_time,
       coalesce(r.idempotency_key, 'run:' || r.id), r.lease_until, r.priority, r.run_at,
       r.max_retries, r.retries_used, r.backoff_base_seconds, r.backoff_cap_seconds,
       r.cancel_requested, r.namespace,
       (SELECT j.dependency FROM job_definitions j WHERE j.id = r.job_id),
       coalesce(r.hot_epoch, 0), r.pod_name, r.pod_uid
FROM job_runs r
WHERE r.state = 'running'
  AND r.lease_owner = %(worker)s
  AND r.execution_model = 'pod'
ORDER BY r.id
