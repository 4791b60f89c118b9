-- Current definition; last changed by migrations/0180_batches_join_by_hash.sql.
-- Extend the leases this worker still holds (queries/heartbeat.sql). A run missing from the
-- result was lost: its attempt moved on, the reaper took it, or another worker owns it now.
-- Plan: the batch's unnest is joined to its runs by hash, never by a nested loop that reads it
-- again for each run; `SET enable_nestloop = off` on this function, which holds only that
-- statement, sees to it. Why: sundial_apply_outcomes.sql and docs/adr/0043.
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
