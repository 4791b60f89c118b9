-- The heartbeat, the finish's fenced update and the release join their batch by hash
-- (docs/adr/0043-batches-join-their-runs-by-hash.md).
--
-- Each of the three joins the batch's unnest to job_runs on (id, attempt). The planner
-- expects the probe of job_runs to find about one row (the statistics rarely count the runs
-- one worker holds), and from that a nested loop that reads the unnest again for every run
-- looks cheapest. It compares each run with every outcome: with 500 a batch, 250,000
-- comparisons and 86 ms per finish, 160 µs of PostgreSQL's CPU per job. Each statement now
-- sits alone in a function with `SET enable_nestloop = off`, so the join is a hash join
-- whatever the statistics say. The heartbeat and the release were plain statements
-- (queries/heartbeat.sql, release.sql); they become sundial_heartbeat and sundial_release.
-- sundial_finish keeps its signature and calls sundial_apply_outcomes for its update, so the
-- setting does not reach the statements that follow it (the dependents' joins want their
-- nested loops).

-- This migration rewrites sundial_finish as 0140 left it. Refuse to run over a different one (a
-- change numbered before this file but merged after it was written would otherwise be reverted
-- in silence): fold that change into the definition below and put the md5(prosrc) of the
-- definition it replaces here.
DO $$
BEGIN
    IF (SELECT md5(prosrc) FROM pg_proc WHERE proname = 'sundial_finish')
           IS DISTINCT FROM 'd36950c6ae42f6d2969a00d857bbf0c8' THEN
        RAISE EXCEPTION 'sundial_finish is not as 0140 left it: merge the other migration''s '
            'change into 0180_batches_join_by_hash.sql';
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION sundial_heartbeat(
    p_worker text, p_ids bigint[], p_attempts integer[], p_lease_seconds double precision)
RETURNS TABLE (run_id bigint, cancel_requested boolean, lease_until timestamptz)
LANGUAGE plpgsql
SET enable_nestloop = off
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
        UPDATE job_runs r
        SET lease_until = now() + make_interval(secs => p_lease_seconds)
        FROM unnest(p_ids, p_attempts) AS h(id, attempt)
        WHERE r.id = ANY(p_ids)
          AND r.id = h.id
          AND r.attempt = h.attempt
          AND r.lease_owner = p_worker
          AND r.state = (SELECT 'running'::text)
        RETURNING r.id, r.cancel_requested, r.lease_until;
END
$$;

CREATE OR REPLACE FUNCTION sundial_release(
    p_worker text, p_ids bigint[], p_attempts integer[], p_delays double precision[],
    p_reasons text[])
RETURNS TABLE (run_id bigint, state text)
LANGUAGE plpgsql
SET enable_nestloop = off
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
        UPDATE job_runs r
        SET state = CASE WHEN h.delay > 0 THEN 'retry_wait' ELSE 'pending' END,
            run_at = CASE WHEN h.delay > 0 THEN now() + make_interval(secs => h.delay)
                          ELSE r.run_at END,
            lease_until = NULL,
            last_error = h.reason
        FROM unnest(p_ids, p_attempts, p_delays, p_reasons) AS h(id, attempt, delay, reason)
        WHERE r.id = ANY(p_ids)
          AND r.id = h.id
          AND r.attempt = h.attempt
          AND r.lease_owner = p_worker
          AND r.state = (SELECT 'running'::text)
        RETURNING r.id, r.state;
END
$$;

CREATE OR REPLACE FUNCTION sundial_apply_outcomes(
    p_worker text, p_ids bigint[], p_attempts integer[], p_failure_classes text[],
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
                  f.failure_class, f.error;
END
$$;

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
    SELECT array_agg(u.run_id), array_agg(u.attempt), array_agg(u.state),
           array_agg(u.has_dependents), array_agg(u.started_at), array_agg(u.lease_owner),
           array_agg(u.failure_class), array_agg(u.error)
    INTO u_ids, u_attempts, u_states, u_has_dependents, u_started, u_owners, u_failures,
         u_errors
    FROM sundial_apply_outcomes(p_worker, p_ids, p_attempts, p_failure_classes, p_errors,
                                p_delays, p_retryable, p_counts, p_terminal_states,
                                p_infra_limit, p_details) u;

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
