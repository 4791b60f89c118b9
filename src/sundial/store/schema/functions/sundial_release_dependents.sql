-- Current definition; last changed by migrations/0300_logins_kept_to_namespaces.sql.
-- A run released from 'blocked' ages from its release, not from its run_at (ADR 0001,
-- decision 2): otherwise a child that waited an hour on its parents would enter the queue
-- an hour "old" and overtake fresh higher-priority runs. A keyed child goes to 'scheduled',
-- to wait for its key's room (promote_keyed.sql).
-- Count completed upstream runs off their children (unchanged otherwise from 0004).
CREATE OR REPLACE FUNCTION sundial_release_dependents(upstream_ids bigint[])
RETURNS TABLE (run_id bigint, state text)
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    WITH upstream_counts AS (
        SELECT d.run_id, count(*)::int AS n
        FROM job_run_deps d
        WHERE d.depends_on = ANY (ARRAY(SELECT id FROM sundial_own_runs(upstream_ids)))
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
                WHEN r.run_at > now() OR r.concurrency_key IS NOT NULL THEN 'scheduled'
                ELSE 'pending'
            END,
            -- Age from the moment the run became claimable, not from its run_at: time spent
            -- blocked on upstream runs must not let it jump ahead of higher priorities.
            dispatch_key = sundial_dispatch_key(greatest(r.run_at, now()), r.priority)
        FROM upstream_counts c, locked l
        WHERE r.id = c.run_id AND l.id = r.id AND r.state = 'blocked'
        RETURNING r.id, r.state
    )
    SELECT id, state FROM counted WHERE state <> 'blocked'
$$;
