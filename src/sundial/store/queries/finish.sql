-- Record a batch of outcomes, each fenced on (id, attempt, lease owner). The next state is
-- decided by sundial_next_state on the row as locked, so a concurrent change is taken into
-- account; a run missing from the result means its lease was lost and nothing changed.
UPDATE job_runs r
SET state = sundial_next_state(f.failure_class, f.retryable, f.counts, f.terminal_state,
        r.retries_used, r.max_retries, r.infra_retries_used, %(infra_limit)s),
    run_at = CASE WHEN sundial_next_state(f.failure_class, f.retryable, f.counts,
                      f.terminal_state, r.retries_used, r.max_retries, r.infra_retries_used,
                      %(infra_limit)s) = 'retry_wait'
                  THEN now() + make_interval(secs => f.delay) ELSE r.run_at END,
    retries_used = r.retries_used + CASE
        WHEN f.counts AND sundial_next_state(f.failure_class, f.retryable, f.counts,
            f.terminal_state, r.retries_used, r.max_retries, r.infra_retries_used,
            %(infra_limit)s) = 'retry_wait' THEN 1 ELSE 0 END,
    infra_retries_used = r.infra_retries_used + CASE
        WHEN NOT f.counts AND sundial_next_state(f.failure_class, f.retryable, f.counts,
            f.terminal_state, r.retries_used, r.max_retries, r.infra_retries_used,
            %(infra_limit)s) = 'retry_wait' THEN 1 ELSE 0 END,
    finished_at = CASE WHEN sundial_next_state(f.failure_class, f.retryable, f.counts,
                      f.terminal_state, r.retries_used, r.max_retries, r.infra_retries_used,
                      %(infra_limit)s) = 'retry_wait'
                  THEN NULL ELSE now() END,
    lease_until = NULL,
    failure_reason = f.failure_class,
    last_error = CASE WHEN f.failure_class IS NULL THEN r.last_error ELSE f.error END
FROM unnest(%(ids)s::bigint[], %(attempts)s::int[], %(failure_classes)s::text[],
            %(errors)s::text[], %(delays)s::double precision[], %(retryable)s::boolean[],
            %(counts)s::boolean[], %(terminal_states)s::text[])
     AS f(id, attempt, failure_class, error, delay, retryable, counts, terminal_state)
WHERE r.id = f.id
  AND r.attempt = f.attempt
  AND r.lease_owner = %(worker)s
  AND r.state = 'running'
RETURNING r.id, r.attempt, r.state, r.has_dependents, r.started_at, r.lease_owner,
          f.failure_class, f.error
