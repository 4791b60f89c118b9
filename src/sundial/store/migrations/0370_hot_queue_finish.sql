-- The fenced finish of an attempt the Redis hot queue handed out (sundial.store.hot_queue,
-- docs/adr/0024-hot-queue-move.md).
--
-- With the hot queue on Redis the row stays pending while its attempt runs: the claim is in
-- Redis, and PostgreSQL learns the attempt at its finish. The token is (epoch, attempt); the
-- row records the last token written (hot_epoch, attempt), and a finish is accepted only with a
-- larger one, so a finisher of an older epoch or attempt (a lease lost, a Redis failover that
-- handed the attempt number out again under a new epoch) changes nothing. The reconciler raises
-- the recorded token before it delivers again a run whose attempt may still be finishing.
ALTER TABLE job_runs ADD COLUMN hot_epoch bigint;

-- Record a batch of hot-queue outcomes: each run still pending whose recorded token is older
-- than its outcome's is started under that token (running, its attempt, this worker's lease),
-- then everything goes through sundial_finish as a claimed attempt's outcome would, in the same
-- statement: the next state, the retries, the attempt history and the dependents are decided
-- in one place for both claims. The intermediate row version is the price of that one place.
CREATE FUNCTION sundial_finish_hot(
    p_worker text, p_ids bigint[], p_epochs bigint[], p_attempts integer[],
    p_started timestamptz[], p_failure_classes text[], p_errors text[],
    p_delays double precision[], p_retryable boolean[], p_counts boolean[],
    p_terminal_states text[], p_infra_limit integer, p_details text[])
RETURNS TABLE (run_id bigint, state text, is_dependent boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    started bigint[];
BEGIN
    WITH moved AS (
        UPDATE job_runs r
        SET state = 'running', attempt = f.attempt, hot_epoch = f.epoch,
            lease_owner = p_worker, lease_until = now(),
            started_at = coalesce(f.started, now())
        FROM unnest(p_ids, p_epochs, p_attempts, p_started) AS f(id, epoch, attempt, started)
        WHERE r.id = ANY(p_ids)
          AND r.id = f.id
          AND r.state = 'pending'
          AND f.attempt >= r.attempt
          AND (f.epoch, f.attempt) > (coalesce(r.hot_epoch, 0), r.attempt)
        RETURNING r.id
    )
    SELECT array_agg(m.id) INTO started FROM moved m;
    IF started IS NULL THEN
        RETURN;
    END IF;
    -- The outcomes of runs not started here are left out (their ids NULL): fenced out.
    RETURN QUERY
        SELECT * FROM sundial_finish(
            p_worker,
            ARRAY(SELECT CASE WHEN t.id = ANY(started) THEN t.id END
                  FROM unnest(p_ids) WITH ORDINALITY AS t(id, n) ORDER BY t.n),
            p_attempts, p_failure_classes, p_errors, p_delays, p_retryable, p_counts,
            p_terminal_states, p_infra_limit, p_details);
END
$$;
