-- A runner writes the state of its breakers (store.circuits.publish, migration 0150): one row
-- per dependency, upserted in one statement. Only while the runner's announcement exists
-- (runners, 0082): before its first announcement, or after it withdrew, nothing is written and
-- the runner tries again on its next refresh. Returns the dependencies written.
INSERT INTO circuits (worker_id, dependency, state, since, updated_at)
SELECT r.worker_id, c.dependency, c.state, c.since, now()
FROM runners r,
     unnest(%(dependencies)s::text[], %(states)s::text[], %(since)s::timestamptz[])
         AS c(dependency, state, since)
WHERE r.worker_id = %(worker)s
ON CONFLICT (worker_id, dependency) DO UPDATE
SET state = excluded.state,
    since = excluded.since,
    updated_at = excluded.updated_at
RETURNING dependency
