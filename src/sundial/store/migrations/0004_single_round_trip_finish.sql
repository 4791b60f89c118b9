-- Speed without giving up the invariants (measured by bench/store_throughput.py):
--
-- 1. A finish is ONE statement, sundial_finish(), so the outcome, the dependency release or
--    failure, and the attempt history still commit together but cost one round trip instead
--    of BEGIN + several statements + COMMIT.
-- 2. Heartbeats become HOT updates: the reaper's index no longer contains lease_until (the
--    column a heartbeat changes), and pages keep free space for the new row versions, so a
--    heartbeat writes no index entries. The reaper scans running runs, which are bounded by
--    the number of worker slots, and filters on lease_until.

DROP INDEX job_runs_lease_idx;
CREATE INDEX job_runs_running_idx ON job_runs (id) WHERE state = 'running';
ALTER TABLE job_runs SET (fillfactor = 80);

-- Count completed upstream runs off their children, under the children's row locks (in id
-- order, so concurrent finishes cannot deadlock). Returns children whose state changed.
CREATE FUNCTION sundial_release_dependents(upstream_ids bigint[])
RETURNS TABLE (run_id bigint, state text)
LANGUAGE sql AS $$
    WITH upstream_counts AS (
        SELECT d.run_id, count(*)::int AS n
        FROM job_run_deps d
        WHERE d.depends_on = ANY(upstream_ids)
        GROUP BY d.run_id
    ), locked AS (
        SELECT r.id FROM job_runs r JOIN upstream_counts c ON c.run_id = r.id
        WHERE r.state = 'blocked'
        ORDER BY r.id
        FOR UPDATE OF r
    ), counted AS (
        -- The UPDATE works on each child's newest row version: two parents completing at
        -- once both count, and exactly one of them sees the counter reach zero.
        UPDATE job_runs r
        SET pending_dependencies = r.pending_dependencies - c.n,
            state = CASE
                WHEN r.pending_dependencies - c.n > 0 THEN 'blocked'
                WHEN r.run_at > now() THEN 'scheduled'
                ELSE 'pending'
            END
        FROM upstream_counts c, locked l
        WHERE r.id = c.run_id AND l.id = r.id AND r.state = 'blocked'
        RETURNING r.id, r.state
    )
    SELECT id, state FROM counted WHERE state <> 'blocked'
$$;

-- End every blocked run downstream of upstream runs that ended without completing,
-- recursively, naming the cause. A cancelled upstream cancels; any other end fails.
CREATE FUNCTION sundial_fail_dependents(upstream_ids bigint[], upstream_states text[])
RETURNS TABLE (run_id bigint, state text)
LANGUAGE sql AS $$
    WITH RECURSIVE roots AS (
        SELECT * FROM unnest(upstream_ids, upstream_states) AS t(id, state)
    ), downstream(id, root) AS (
        SELECT d.run_id, d.depends_on FROM job_run_deps d JOIN roots ON d.depends_on = roots.id
        UNION
        SELECT d.run_id, downstream.root
        FROM job_run_deps d JOIN downstream ON d.depends_on = downstream.id
    ), cause AS (
        SELECT DISTINCT ON (downstream.id) downstream.id, roots.id AS root, roots.state AS root_state
        FROM downstream JOIN roots ON roots.id = downstream.root
        ORDER BY downstream.id, roots.id
    ), locked AS (
        SELECT r.id FROM job_runs r JOIN cause c ON c.id = r.id
        WHERE r.state = 'blocked' ORDER BY r.id FOR UPDATE OF r
    )
    UPDATE job_runs r
    SET state = CASE WHEN c.root_state = 'cancelled' THEN 'cancelled' ELSE 'failed' END,
        failure_reason = CASE WHEN c.root_state = 'cancelled' THEN 'cancelled'
                              ELSE 'upstream_failed' END,
        last_error = CASE WHEN c.root_state = 'cancelled'
                          THEN format('upstream run %s was cancelled', c.root)
                          ELSE format('upstream run %s failed (%s)', c.root, c.root_state) END,
        finished_at = now()
    FROM cause c, locked l
    WHERE r.id = c.id AND l.id = r.id AND r.state = 'blocked'
    RETURNING r.id, r.state
$$;

-- Record attempts that did not succeed, creating the month's partition the first time.
CREATE FUNCTION sundial_record_attempts(
    run_ids bigint[], attempts integer[], workers text[], started_ats timestamptz[],
    outcomes text[], failure_reasons text[], errors text[])
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(cardinality(run_ids), 0) = 0 THEN
        RETURN;
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM pg_class
        WHERE relname = 'job_run_attempts_' || to_char(now() AT TIME ZONE 'UTC', 'YYYYMM')
    ) THEN
        PERFORM sundial_ensure_month_partition(now());
    END IF;
    INSERT INTO job_run_attempts (run_id, attempt, worker, started_at, ended_at, outcome,
                                  failure_reason, error)
    SELECT a.run_id, a.attempt, a.worker, a.started_at, now(), a.outcome, a.failure_reason, a.error
    FROM unnest(run_ids, attempts, workers, started_ats, outcomes, failure_reasons, errors)
         AS a(run_id, attempt, worker, started_at, outcome, failure_reason, error)
    ON CONFLICT DO NOTHING;
END
$$;

-- Record a batch of outcomes, each fenced on (id, attempt, lease owner), with everything that
-- follows from them, in one statement. Returns the batch's runs that were updated
-- (is_dependent = false; a run missing here lost its lease: nothing changed) and the
-- dependents whose state changed (is_dependent = true). The next state is decided by
-- sundial_next_state on the row as locked, so a concurrent change is taken into account.
CREATE FUNCTION sundial_finish(
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
                p_infra_limit),
            run_at = CASE WHEN sundial_next_state(f.failure_class, f.retryable, f.counts,
                              f.terminal_state, r.retries_used, r.max_retries,
                              r.infra_retries_used, p_infra_limit) = 'retry_wait'
                          THEN now() + make_interval(secs => f.delay) ELSE r.run_at END,
            retries_used = r.retries_used + CASE
                WHEN f.counts AND sundial_next_state(f.failure_class, f.retryable, f.counts,
                    f.terminal_state, r.retries_used, r.max_retries, r.infra_retries_used,
                    p_infra_limit) = 'retry_wait' THEN 1 ELSE 0 END,
            infra_retries_used = r.infra_retries_used + CASE
                WHEN NOT f.counts AND sundial_next_state(f.failure_class, f.retryable,
                    f.counts, f.terminal_state, r.retries_used, r.max_retries,
                    r.infra_retries_used, p_infra_limit) = 'retry_wait' THEN 1 ELSE 0 END,
            finished_at = CASE WHEN sundial_next_state(f.failure_class, f.retryable, f.counts,
                              f.terminal_state, r.retries_used, r.max_retries,
                              r.infra_retries_used, p_infra_limit) = 'retry_wait'
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
