-- Current definition; last changed by migrations/0180_batches_join_by_hash.sql.
-- The fenced update of sundial_finish: each outcome is written to its run only where (id,
-- attempt, lease owner) still match and the run still runs; returns the runs it changed. The
-- next state is decided by sundial_next_state on the row as locked.
-- Plan (docs/adr/0043-batches-join-their-runs-by-hash.md): the batch's unnest is joined to
-- its runs by hash, never by a nested loop. The scan of job_runs is a primary-key probe
-- (`r.id = ANY(p_ids)`, the state fenced as `(SELECT 'running')`: docs/adr/0028), and the
-- planner expects it to find about one row, since the statistics rarely count the runs this
-- worker holds. From that estimate a nested loop that reads the unnest again for each run
-- looks cheapest, and it compares every run with every outcome: 86 ms for a batch of 500, 160
-- µs per job. `SET enable_nestloop = off` on this function, which holds only that statement,
-- leaves the hash join. tests/integration/store/test_stable_plans.py checks the plan.
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
