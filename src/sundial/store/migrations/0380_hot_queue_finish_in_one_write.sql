-- The hot queue's finish in one row version (docs/adr/0024-hot-queue-move.md).
--
-- 0370's sundial_finish_hot started each run (pending -> running under the token) and handed
-- the batch to sundial_finish: two row versions per run, as many as PostgreSQL's own claim and
-- finish write, so moving the claim to Redis saved PostgreSQL no writes. Here the fenced update
-- writes the token, the finisher and the start with the outcome: pending to the next state in
-- one version. sundial_finish and sundial_apply_outcomes are not changed.

CREATE FUNCTION sundial_apply_hot_outcomes(
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

CREATE OR REPLACE FUNCTION sundial_finish_hot(
    p_worker text, p_ids bigint[], p_epochs bigint[], p_attempts integer[],
    p_started timestamptz[], p_failure_classes text[], p_errors text[],
    p_delays double precision[], p_retryable boolean[], p_counts boolean[],
    p_terminal_states text[], p_infra_limit integer, p_details text[])
RETURNS TABLE (run_id bigint, state text, is_dependent boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    u_ids bigint[];
    u_attempts integer[];
    u_states text[];
    u_has_dependents boolean[];
    u_started timestamptz[];
    u_owners text[];
    u_failures text[];
    u_errors text[];
BEGIN
    SELECT array_agg(u.run_id), array_agg(u.attempt), array_agg(u.state),
           array_agg(u.has_dependents), array_agg(u.started_at), array_agg(u.lease_owner),
           array_agg(u.failure_class), array_agg(u.error)
    INTO u_ids, u_attempts, u_states, u_has_dependents, u_started, u_owners, u_failures,
         u_errors
    FROM sundial_apply_hot_outcomes(p_worker, p_ids, p_epochs, p_attempts, p_started,
                                    p_failure_classes, p_errors, p_delays, p_retryable,
                                    p_counts, p_terminal_states, p_infra_limit, p_details) u;

    IF u_ids IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT t.id, t.state, false FROM unnest(u_ids, u_states) AS t(id, state);

    IF EXISTS (SELECT 1 FROM unnest(u_failures) AS t(failure) WHERE t.failure IS NOT NULL) THEN
        PERFORM sundial_record_attempts(
            array_agg(t.id), array_agg(t.attempt), array_agg(t.owner), array_agg(t.started),
            array_agg(t.state), array_agg(t.failure), array_agg(t.error))
        FROM unnest(u_ids, u_attempts, u_owners, u_started, u_states, u_failures, u_errors)
             AS t(id, attempt, owner, started, state, failure, error)
        WHERE t.failure IS NOT NULL;
    END IF;

    IF true = ANY(u_has_dependents) THEN
        RETURN QUERY
            SELECT d.run_id, d.state, true
            FROM sundial_release_dependents(ARRAY(
                SELECT t.id FROM unnest(u_ids, u_states, u_has_dependents) AS t(id, state, deps)
                WHERE t.deps AND t.state = 'completed')) AS d;
        RETURN QUERY
            SELECT d.run_id, d.state, true
            FROM sundial_fail_dependents(
                ARRAY(SELECT t.id FROM unnest(u_ids, u_states, u_has_dependents)
                          AS t(id, state, deps)
                      WHERE t.deps AND t.state NOT IN ('completed', 'retry_wait')
                      ORDER BY t.id),
                ARRAY(SELECT t.state FROM unnest(u_ids, u_states, u_has_dependents)
                          AS t(id, state, deps)
                      WHERE t.deps AND t.state NOT IN ('completed', 'retry_wait')
                      ORDER BY t.id)) AS d;
    END IF;
END
$$;
