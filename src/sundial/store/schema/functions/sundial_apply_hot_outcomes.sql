-- Current definition; last changed by migrations/0380_hot_queue_finish_in_one_write.sql.
-- The fenced update of sundial_finish_hot: sundial_apply_outcomes' update for an attempt the
-- hot queue handed out (docs/adr/0024-hot-queue-move.md). Each outcome is written to its run
-- only where the run is still pending and its recorded token (hot_epoch, attempt) is older
-- than the outcome's; the write records the token, the finisher and when the attempt started,
-- so the row goes from pending to its next state in one row version. The SET is
-- sundial_apply_outcomes' (keep the two in step: tests/integration/store/test_hot_queue_finish.py
-- runs the same outcomes through both finishes and compares the rows); only the fence and the
-- four columns an attempt's start would have written differ. Same plan setting, same reason.
CREATE OR REPLACE FUNCTION sundial_apply_hot_outcomes(
    p_worker text, p_ids bigint[], p_epochs bigint[], p_attempts integer[],
    p_started timestamptz[], p_failure_classes text[],
    p_errors text[], p_delays double precision[], p_retryable boolean[], p_counts boolean[],
    p_terminal_states text[], p_infra_limit integer, p_details text[])
RETURNS TABLE (run_id bigint, attempt integer, state text, has_dependents boolean,
               started_at timestamptz, lease_owner text, failure_class text, error text)
LANGUAGE plpgsql
SET enable_nestloop = off
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
        UPDATE job_runs r
        SET state = sundial_next_state(f.failure_class, f.retryable, f.counts,
                f.terminal_state, r.retries_used, r.max_retries, r.infra_retries_used,
                p_infra_limit, r.oom_retries_used, r.oom_max_retries),
            run_at = CASE WHEN sundial_next_state(f.failure_class, f.retryable, f.counts,
                              f.terminal_state, r.retries_used, r.max_retries,
                              r.infra_retries_used, p_infra_limit, r.oom_retries_used,
                              r.oom_max_retries) = 'retry_wait'
                          THEN now() + make_interval(secs => f.delay) ELSE r.run_at END,
            retries_used = r.retries_used + CASE
                WHEN f.counts AND f.failure_class <> 'oom'
                     AND sundial_next_state(f.failure_class, f.retryable, f.counts,
                         f.terminal_state, r.retries_used, r.max_retries,
                         r.infra_retries_used, p_infra_limit, r.oom_retries_used,
                         r.oom_max_retries) = 'retry_wait' THEN 1 ELSE 0 END,
            infra_retries_used = r.infra_retries_used + CASE
                WHEN NOT f.counts AND f.failure_class <> 'oom'
                     AND sundial_next_state(f.failure_class, f.retryable, f.counts,
                         f.terminal_state, r.retries_used, r.max_retries,
                         r.infra_retries_used, p_infra_limit, r.oom_retries_used,
                         r.oom_max_retries) = 'retry_wait' THEN 1 ELSE 0 END,
            oom_retries_used = r.oom_retries_used + CASE
                WHEN f.failure_class = 'oom'
                     AND sundial_next_state(f.failure_class, f.retryable, f.counts,
                         f.terminal_state, r.retries_used, r.max_retries,
                         r.infra_retries_used, p_infra_limit, r.oom_retries_used,
                         r.oom_max_retries) = 'retry_wait' THEN 1 ELSE 0 END,
            finished_at = CASE WHEN sundial_next_state(f.failure_class, f.retryable, f.counts,
                              f.terminal_state, r.retries_used, r.max_retries,
                              r.infra_retries_used, p_infra_limit, r.oom_retries_used,
                              r.oom_max_retries) = 'retry_wait'
                          THEN NULL ELSE now() END,
            lease_until = NULL,
            attempt = f.attempt,
            hot_epoch = f.epoch,
            lease_owner = p_worker,
            started_at = coalesce(f.started, now()),
            failure_reason = f.failure_class,
            failure_detail = f.detail,
            last_error = CASE WHEN f.failure_class IS NULL THEN r.last_error
                              WHEN f.failure_class = 'cancelled'
                                   THEN coalesce(r.cancel_reason, f.error)
                              ELSE f.error END
        FROM unnest(p_ids, p_epochs, p_attempts, p_started, p_failure_classes, p_errors,
                    p_delays, p_retryable, p_counts, p_terminal_states, p_details)
             AS f(id, epoch, attempt, started, failure_class, error, delay, retryable, counts,
                  terminal_state, detail)
        WHERE r.id = ANY(p_ids)
          AND r.id = f.id
          AND f.attempt >= r.attempt
          AND (f.epoch, f.attempt) > (coalesce(r.hot_epoch, 0), r.attempt)
          AND r.state = (SELECT 'pending'::text)
        RETURNING r.id, r.attempt, r.state, r.has_dependents, r.started_at, r.lease_owner,
                  f.failure_class, f.error;
END
$$;
