-- The upstream runs in %(ids)s just completed, in this transaction: count them off their
-- children. The children are locked in id order first so two finishing batches cannot
-- deadlock; the UPDATE then works on each child's newest row version, so two parents
-- completing at once both count, and the last one releases the child.
WITH upstream_counts AS (
    SELECT d.run_id, count(*)::int AS n
    FROM job_run_deps d
    WHERE d.depends_on = ANY(%(ids)s::bigint[])
    GROUP BY d.run_id
), locked AS (
    SELECT r.id FROM job_runs r JOIN upstream_counts c ON c.run_id = r.id
    WHERE r.state = 'blocked'
    ORDER BY r.id
    FOR UPDATE OF r
)
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
