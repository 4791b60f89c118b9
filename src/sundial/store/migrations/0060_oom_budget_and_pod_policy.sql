-- Pod mode, completed (docs/adr/0010-oom-budget-and-pod-deletion.md):
--
-- 1. OOMKilled has its own retry budget (docs/failure-modes.md). A job's `oom.maxRetries` is
--    copied to each run at submit, like max_retries, so a finish never joins the job. An
--    attempt that ends with class 'oom' spends oom_retries_used, never retries_used; once
--    the OOM budget is spent the run ends dead_lettered with failure_reason 'oom'.
-- 2. The job's memory bump on an OOM retry (`oom.memoryIncreasePercent`, `oom.maxMemory`) and
--    what a Pod deleted by someone else does (`podDeletionPolicy`: Retry | Cancel) are read
--    by the pod launcher from job_definitions at claim time, as the template is.
-- 3. Archived runs keep their Pod columns and their OOM budget, so `sundial runs` and JobRun
--    status show how an archived pod run ended.

ALTER TABLE job_definitions
    ADD COLUMN oom_max_retries integer NOT NULL DEFAULT 2
        CHECK (oom_max_retries BETWEEN 0 AND 100),
    -- NULL: the installation's default bump (ManifestSettings.oom_memory_factor).
    ADD COLUMN oom_memory_increase_percent integer
        CHECK (oom_memory_increase_percent BETWEEN 0 AND 1000),
    -- NULL: the operator's cap.
    ADD COLUMN oom_max_memory_bytes bigint CHECK (oom_max_memory_bytes > 0),
    ADD COLUMN pod_deletion_policy text NOT NULL DEFAULT 'Retry'
        CHECK (pod_deletion_policy IN ('Retry', 'Cancel'));

-- Constant defaults: no table rewrite, runs already queued get the default budget.
ALTER TABLE job_runs
    ADD COLUMN oom_max_retries integer NOT NULL DEFAULT 2 CHECK (oom_max_retries >= 0),
    ADD COLUMN oom_retries_used integer NOT NULL DEFAULT 0 CHECK (oom_retries_used >= 0);

ALTER TABLE finished_runs
    ADD COLUMN pod_name         text,
    ADD COLUMN pod_exit_code    integer,
    ADD COLUMN pod_reason       text,
    ADD COLUMN oom_max_retries  integer NOT NULL DEFAULT 2,
    ADD COLUMN oom_retries_used integer NOT NULL DEFAULT 0;

-- The budget a failure draws on is chosen by its class: 'oom' spends the OOM budget, a class
-- that counts spends maxRetries, any other retried class the infrastructure budget. The
-- signature grows by the OOM counters, so the 8-argument version is dropped rather than left
-- as an overload that would silently ignore the OOM budget (sundial_finish, below, is its
-- only caller). A retried class other than timeout ends dead_lettered, as in 0050.
DROP FUNCTION sundial_next_state(text, boolean, boolean, text, integer, integer, integer, integer);

CREATE FUNCTION sundial_next_state(
    failure_class text, retryable boolean, counts boolean, terminal_state text,
    retries_used integer, max_retries integer, infra_retries_used integer, infra_limit integer,
    oom_retries_used integer, oom_max_retries integer)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN failure_class IS NULL THEN 'completed'
        WHEN NOT retryable THEN terminal_state
        WHEN failure_class = 'oom'
            THEN CASE WHEN oom_retries_used >= oom_max_retries THEN 'dead_lettered'
                      ELSE 'retry_wait' END
        WHEN (counts AND retries_used >= max_retries)
             OR (NOT counts AND infra_retries_used >= infra_limit)
            THEN CASE WHEN terminal_state = 'timed_out' THEN 'timed_out' ELSE 'dead_lettered' END
        ELSE 'retry_wait'
    END
$$;

-- As in 0004, with the OOM budget: the next state is still decided on the row as locked.
CREATE OR REPLACE FUNCTION sundial_finish(
    p_worker text, p_ids bigint[], p_attempts integer[], p_failure_classes text[],
    p_errors text[], p_delays double precision[], p_retryable boolean[], p_counts boolean[],
    p_terminal_states text[], p_infra_limit integer)
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
            last_error = CASE WHEN f.failure_class IS NULL THEN r.last_error ELSE f.error END
        FROM unnest(p_ids, p_attempts, p_failure_classes, p_errors, p_delays, p_retryable,
                    p_counts, p_terminal_states)
             AS f(id, attempt, failure_class, error, delay, retryable, counts, terminal_state)
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

-- As in 0003, keeping the Pod columns and the OOM budget of archived runs.
CREATE OR REPLACE FUNCTION sundial_archive_finished_runs(older_than interval, batch_size integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    month_start timestamptz;
    moved integer;
BEGIN
    FOR month_start IN
        SELECT DISTINCT date_trunc('month', finished_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
        FROM job_runs WHERE finished_at IS NOT NULL AND finished_at < now() - older_than
    LOOP
        PERFORM sundial_ensure_month_partition(month_start);
    END LOOP;
    WITH picked AS (
        SELECT id FROM job_runs
        WHERE finished_at IS NOT NULL AND finished_at < now() - older_than
        ORDER BY finished_at
        LIMIT batch_size
        FOR UPDATE SKIP LOCKED
    ), gone AS (
        DELETE FROM job_runs r USING picked WHERE r.id = picked.id
        RETURNING r.*
    ), edges AS (
        DELETE FROM job_run_deps d USING gone WHERE d.run_id = gone.id
    )
    INSERT INTO finished_runs (
        id, job_id, schedule_id, fire_time, idempotency_key, queue, handler, execution_model,
        state, priority, run_at, attempt, retries_used, infra_retries_used, lease_expiries,
        lease_owner, args, failure_reason, last_error, created_at, started_at, finished_at,
        pod_name, pod_exit_code, pod_reason, oom_max_retries, oom_retries_used)
    SELECT id, job_id, schedule_id, fire_time, idempotency_key, queue, handler, execution_model,
        state, priority, run_at, attempt, retries_used, infra_retries_used, lease_expiries,
        lease_owner, args, failure_reason, last_error, created_at, started_at, finished_at,
        pod_name, pod_exit_code, pod_reason, oom_max_retries, oom_retries_used
    FROM gone;
    GET DIAGNOSTICS moved = ROW_COUNT;
    RETURN moved;
END
$$;
