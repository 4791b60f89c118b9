-- How an attempt failed, in detail, reaches the run (docs/adr/0020-one-word-for-each-concept.md).
--
-- failure_reason holds the failure class (sundial.scheduling.failures.FailureClass: error,
-- permanent, timeout, crash, ...), the word the retry rules and the queries key on. The
-- runner knows more than the class: a permanent failure is BadArgs or UnknownHandler, an error
-- is a HandlerError (sundial.runner.outcomes.FailureDetail). That detail was only logged; it is
-- now kept on the run, live and archived, next to the class, so JobRun status and `sundial
-- runs` show it. A Pod's own reason stays in pod_reason. Nullable with no default: adding the
-- columns rewrites nothing.

-- This migration rewrites sundial_finish and sundial_archive_finished_runs from their
-- definitions in 0070 and 0100. Refuse to run over a different one (a change numbered before
-- this file but merged after it was written would otherwise be reverted in silence): fold that
-- change into the definitions below and put the md5(prosrc) of the definitions it replaces
-- here (SELECT md5(prosrc) FROM pg_proc WHERE proname = '...' on a database migrated to 0109).
DO $$
BEGIN
    IF (SELECT md5(prosrc) FROM pg_proc WHERE proname = 'sundial_finish')
           IS DISTINCT FROM '243175cd8a791b21910c2599e5448d00'
       OR (SELECT md5(prosrc) FROM pg_proc WHERE proname = 'sundial_archive_finished_runs')
           IS DISTINCT FROM 'ac4f223675f15243b895dd9b68bd5262' THEN
        RAISE EXCEPTION 'sundial_finish or sundial_archive_finished_runs is not as 0070 and '
            '0100 left it: merge the other migration''s change into 0110_failure_detail.sql';
    END IF;
END
$$;

ALTER TABLE job_runs
    ADD COLUMN failure_detail text CHECK (length(failure_detail) BETWEEN 1 AND 64);
ALTER TABLE finished_runs
    ADD COLUMN failure_detail text;

-- As in 0070, with each outcome's detail (p_details; NULL when there is none).
DROP FUNCTION sundial_finish(text, bigint[], integer[], text[], text[], double precision[],
    boolean[], boolean[], text[], integer);

CREATE FUNCTION sundial_finish(
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
        WHERE r.id = f.id
          AND r.attempt = f.attempt
          AND r.lease_owner = p_worker
          AND r.state = 'running'
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

-- As in 0100 (bounded batches), keeping the detail of archived runs.
CREATE OR REPLACE FUNCTION sundial_archive_finished_runs(older_than interval, batch_size integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    picked_ids bigint[];
    month_start timestamptz;
    moved integer;
BEGIN
    SELECT coalesce(array_agg(p.id), '{}') INTO picked_ids
    FROM (
        SELECT id FROM job_runs
        WHERE finished_at IS NOT NULL AND finished_at < now() - older_than
        ORDER BY finished_at
        LIMIT batch_size
        FOR UPDATE SKIP LOCKED
    ) p;
    IF cardinality(picked_ids) = 0 THEN
        RETURN 0;
    END IF;
    FOR month_start IN
        SELECT DISTINCT date_trunc('month', finished_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
        FROM job_runs WHERE id = ANY (picked_ids)
    LOOP
        PERFORM sundial_ensure_month_partition(month_start);
    END LOOP;
    WITH gone AS (
        DELETE FROM job_runs r WHERE r.id = ANY (picked_ids)
        RETURNING r.*
    ), edges AS (
        DELETE FROM job_run_deps d USING gone WHERE d.run_id = gone.id
    )
    INSERT INTO finished_runs (
        id, job_id, schedule_id, fire_time, idempotency_key, queue, handler, execution_model,
        state, priority, run_at, attempt, retries_used, infra_retries_used, lease_expiries,
        lease_owner, args, failure_reason, last_error, created_at, started_at, finished_at,
        pod_name, pod_exit_code, pod_reason, oom_max_retries, oom_retries_used, failure_detail)
    SELECT id, job_id, schedule_id, fire_time, idempotency_key, queue, handler, execution_model,
        state, priority, run_at, attempt, retries_used, infra_retries_used, lease_expiries,
        lease_owner, args, failure_reason, last_error, created_at, started_at, finished_at,
        pod_name, pod_exit_code, pod_reason, oom_max_retries, oom_retries_used, failure_detail
    FROM gone;
    GET DIAGNOSTICS moved = ROW_COUNT;
    RETURN moved;
END
$$;
