-- Give back attempts the hot queue handed out to be due again after a delay (a runner whose
-- circuit breaker is open for the run's dependency), as PostgreSQL's release does it
-- (schema/functions/sundial_release.sql): the run waits in retry_wait until promote_due makes
-- it pending again, through a concurrency key's gate, with a dispatch key that keeps its
-- priority, and the outbox delivers it to Redis again. Fenced as a finish is: only where the
-- run is still pending and its recorded token (hot_epoch, attempt) is older than the
-- attempt's; the attempt is recorded, so its number is never handed out again.
UPDATE job_runs r
SET state = 'retry_wait',
    run_at = now() + make_interval(secs => h.delay),
    attempt = h.attempt,
    hot_epoch = h.epoch,
    lease_owner = %(worker)s,
    lease_until = NULL,
    last_error = h.reason
FROM unnest(%(ids)s::bigint[], %(epochs)s::bigint[], %(attempts)s::int[],
            %(delays)s::double precision[], %(reasons)s::text[])
     AS h(id, epoch, attempt, delay, reason)
WHERE r.id = ANY(%(ids)s::bigint[])
  AND r.id = h.id
  AND r.state = 'pending'
  AND h.attempt >= r.attempt
  AND (h.epoch, h.attempt) > (coalesce(r.hot_epoch, 0), r.attempt)
RETURNING r.id, r.state
