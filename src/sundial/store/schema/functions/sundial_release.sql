-- Current definition; last changed by migrations/0180_batches_join_by_hash.sql.
-- Hand running attempts back without spending a retry (queries/release.sql has why and when):
-- only where (id, attempt) and the lease owner still match and the run still runs.
-- Plan: the batch's unnest is joined to its runs by hash, never by a nested loop that reads it
-- again for each run; `SET enable_nestloop = off` on this function, which holds only that
-- statement, sees to it. Why: sundial_apply_outcomes.sql and docs/adr/0043.
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
