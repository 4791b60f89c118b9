-- Current definition; last changed by migrations/0300_logins_kept_to_namespaces.sql.
-- End every blocked run downstream of upstream runs that ended without completing,
-- recursively, naming the cause. A cancelled upstream cancels; any other end fails.
CREATE OR REPLACE FUNCTION sundial_fail_dependents(upstream_ids bigint[], upstream_states text[])
RETURNS TABLE (run_id bigint, state text)
LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    WITH RECURSIVE roots AS (
        SELECT t.* FROM unnest(upstream_ids, upstream_states) AS t(id, state)
        WHERE t.id = ANY (ARRAY(SELECT id FROM sundial_own_runs(upstream_ids)))
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
