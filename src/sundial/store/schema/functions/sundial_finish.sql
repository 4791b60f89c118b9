-- Current definition; last changed by migrations/0140_stable_plans.sql.
-- Record a batch of outcomes, each fenced on (id, attempt, lease owner), with everything that
-- follows from them, in one statement. Returns the batch's runs that were updated
-- (is_dependent = false; a run missing here lost its lease: nothing changed) and the
-- dependents whose state changed (is_dependent = true). The next state is decided by
-- sundial_next_state on the row as locked, so a concurrent change is taken into account. Each
-- outcome carries its failure class (failure_reason), its error (last_error; a cancelled end
-- takes its cancel request's reason) and its detail (failure_detail, NULL when none).
--
-- Plan (docs/adr/0028-backpressure-and-stable-plans.md): one primary-key probe per outcome,
-- whatever the table holds. `r.id = ANY(p_ids)` gives the scan of job_runs an index
-- condition on the key; the fence on the state is written `r.state = (SELECT 'running')`, an
-- init-plan parameter, so that the planner cannot prove the running index's predicate and
-- read that partial index whole instead. With statistics taken while few runs were running it
-- did (a nested loop of job_runs_running_idx against the unnest, up to 10 s per call with
-- 84,000 running rows). tests/integration/store/test_stable_plans.py checks the plan.
CREATE OR REPLACE FUNCTION sundial_finish(
    p_worker text, p_ids bigint[], p_attempts integer[], p_failure_classes text[],
    p_errors text[], p_delays double precision[], p_retryable boolean[], p_counts boolean[],
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
    WITH updated AS (
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
            failure_reason = f.failure_class,
            failure_detail = f.detail,
            last_error = CASE WHEN f.failure_class IS NULL THEN r.last_error
                              WHEN f.failure_class = 'cancelled'
                                   THEN coalesce(r.cancel_reason, f.error)
                              ELSE f.error END
        FROM unnest(p_ids, p_attempts, p_failure_classes, p_errors, p_delays, p_retryable,
                    p_counts, p_terminal_states, p_details)
             AS f(id, attempt, failure_class, error, delay, retryable, counts, terminal_state,
                  detail)
        WHERE r.id = ANY(p_ids)
          AND r.id = f.id
          AND r.attempt = f.attempt
          AND r.lease_owner = p_worker
          AND r.state = (SELECT 'running'::text)
        RETURNING r.id, r.attempt, r.state, r.has_dependents, r.started_at, r.lease_owner,
                  f.failure_class, f.error
    )
    SELECT array_agg(u.id), array_agg(u.attempt), array_agg(u.state),
           array_agg(u.has_dependents), array_agg(u.started_at), array_agg(u.lease_owner),
           array_agg(u.failure_class), array_agg(u.error)
    INTO u_ids, u_attempts, u_states, u_has_dependents, u_started, u_owners, u_failures,
         u_errors
    FROM updated u;

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
