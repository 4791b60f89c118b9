-- Hand running attempts back without spending a retry: a runner draining on SIGTERM, a run
-- whose circuit breaker is open, a run whose process pool was restarted under it. Fenced like
-- finish: only where (id, attempt) and the lease owner still match and the run still runs.
-- With no delay the run is pending again at once and keeps its dispatch_key (its place in
-- line); with a delay it waits in retry_wait until promote_due. attempt is not reset: the
-- fencing token only grows, so the released attempt's late writes stay fenced out.
-- Plan: a primary-key probe per id, written as in heartbeat.sql (see its plan note).
UPDATE job_runs r
SET state = CASE WHEN h.delay > 0 THEN 'retry_wait' ELSE 'pending' END,
    run_at = CASE WHEN h.delay > 0 THEN now() + make_interval(secs => h.delay) ELSE r.run_at END,
    lease_until = NULL,
    last_error = h.reason
FROM unnest(%(ids)s::bigint[], %(attempts)s::int[], %(delays)s::double precision[],
            %(reasons)s::text[]) AS h(id, attempt, delay, reason)
WHERE r.id = ANY(%(ids)s::bigint[])
  AND r.id = h.id
  AND r.attempt = h.attempt
  AND r.lease_owner = %(worker)s
  AND r.state = (SELECT 'running'::text)
RETURNING r.id, r.state
