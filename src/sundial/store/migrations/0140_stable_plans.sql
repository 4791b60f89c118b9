-- Plans for the heartbeat, the finish and the reaper that do not depend on how many finished or
-- running rows the hot table holds (docs/adr/0028-backpressure-and-stable-plans.md).
--
-- * sundial_finish: the fenced UPDATE also says `r.id = ANY(p_ids)` and fences the state as
--   `r.state = (SELECT 'running')`, so job_runs is reached by a primary-key probe per outcome.
--   Joined on `r.id = f.id` with `r.state = 'running'`, the planner could read the running
--   index whole (its predicate proven by the literal) and match each entry against the
--   unnest: up to 10 s per call with 84,000 running rows on a hot table of 1.8M rows.
--   (queries/heartbeat.sql and queries/release.sql are written the same way; they are not
--   functions, so no migration holds them.)
-- * The reaper looks for `state = 'running' AND lease_until < now()`: with the running index
--   keyed on id it read every running row each second (40-60 ms with 84,000 of them). Keyed on
--   lease_until it reads only the expired ones. No statement needs running runs by id that the
--   primary key does not serve, so the index is replaced rather than added. The cost: a
--   heartbeat changes an indexed column and is no longer a HOT update.
--
-- CREATE INDEX (not CONCURRENTLY: a migration is one transaction) blocks writes to job_runs
-- while it reads the running rows; it reads the table once.

-- This migration rewrites sundial_finish as 0110 left it. Refuse to run over a different one (a
-- change numbered before this file but merged after it was written would otherwise be reverted
-- in silence): fold that change into the definition below and put the md5(prosrc) of the
-- definition it replaces here.
DO $$
BEGIN
    IF (SELECT md5(prosrc) FROM pg_proc WHERE proname = 'sundial_finish')
           IS DISTINCT FROM '574b96ab46cfcc42e5f207bba8414f9a' THEN
        RAISE EXCEPTION 'sundial_finish is not as 0110 left it: merge the other migration''s '
            'change into 0140_stable_plans.sql';
    END IF;
END
$$;

DROP INDEX job_runs_running_idx;
CREATE INDEX job_runs_running_by_lease_idx ON job_runs (lease_until) WHERE state = 'running';

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
