-- Current definition; last changed by migrations/0180_batches_join_by_hash.sql.
-- Hand running attempts back without spending a retry (queries/release.sql has why and when):
-- only where (id, attempt) and the lease owner still match and the run still runs.
-- Plan (docs/adr/0043-batches-join-their-runs-by-hash.md): the batch's unnest is joined to
-- its runs by hash, never by a nested loop. The scan of job_runs is a primary-key probe
-- (`r.id = ANY(p_ids)`, the state fenced as `(SELECT 'running')`: docs/adr/0028), and the
-- planner expects it to find about one row, since the statistics rarely count the runs this
-- worker holds. From that estimate a nested loop that reads the unnest again for each run
-- looks cheapest, and it compares every run with every outcome: 86 ms for a batch of 500, 160
-- µs per job. `SET enable_nestloop = off` on this function, which holds only that statement,
-- leaves the hash join. tests/integration/store/test_stable_plans.py checks the plan.
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
