-- A login may be kept to the runs of some namespaces, by PostgreSQL itself
-- (docs/adr/0068-logins-kept-to-namespaces.md).
--
-- A runner's handler code runs in the runner's process and can use its connection: table
-- grants alone let it read and change any namespace's runs. A login listed here sees and
-- writes only the runs of its namespaces: row-level security on the tables that hold runs.
-- A login not listed (the owner, the operator's, every login before this migration) is kept
-- to nothing, so nothing changes until `sundial migrate --login-namespaces` lists one.
--
-- The policy names the session's login (session_user), not current_user: a handler that runs
-- SET ROLE to the runner group role is still kept. The function runs as the owner, so no
-- role needs a grant on the table, and nobody but the owner may change it. Each policy asks
-- it once per statement (an InitPlan), and an unlisted login passes on that one value.

CREATE TABLE login_namespaces (
    login text PRIMARY KEY CHECK (length(login) BETWEEN 1 AND 63),
    namespaces text[] NOT NULL
);

-- The namespaces the session's login is kept to; NULL when it is not listed.
CREATE OR REPLACE FUNCTION sundial_login_namespaces() RETURNS text[]
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT namespaces FROM login_namespaces WHERE login = session_user
$$;

ALTER TABLE job_runs ENABLE ROW LEVEL SECURITY;
CREATE POLICY kept_to_namespaces ON job_runs
    USING ((SELECT sundial_login_namespaces()) IS NULL
           OR namespace = ANY ((SELECT sundial_login_namespaces())::text[]));

-- Archived runs carry their job, whose namespace is theirs.
ALTER TABLE finished_runs ENABLE ROW LEVEL SECURITY;
CREATE POLICY kept_to_namespaces ON finished_runs
    USING ((SELECT sundial_login_namespaces()) IS NULL
           OR EXISTS (SELECT 1 FROM job_definitions j
                      WHERE j.id = finished_runs.job_id
                        AND j.namespace = ANY ((SELECT sundial_login_namespaces())::text[])));

-- A dependency, an attempt and an idempotency key are their run's: visible and writable
-- where the run is (the subqueries are kept by the policies above).
ALTER TABLE job_run_deps ENABLE ROW LEVEL SECURITY;
CREATE POLICY kept_to_namespaces ON job_run_deps
    USING ((SELECT sundial_login_namespaces()) IS NULL
           OR EXISTS (SELECT 1 FROM job_runs r WHERE r.id = job_run_deps.run_id));

ALTER TABLE job_run_attempts ENABLE ROW LEVEL SECURITY;
CREATE POLICY kept_to_namespaces ON job_run_attempts
    USING ((SELECT sundial_login_namespaces()) IS NULL
           OR EXISTS (SELECT 1 FROM job_runs r WHERE r.id = job_run_attempts.run_id)
           OR EXISTS (SELECT 1 FROM finished_runs f WHERE f.id = job_run_attempts.run_id));

-- A kept login's new key may not take the shape of a key the operator makes for another
-- namespace ("team-a/KEY" for a JobRun's idempotencyKey, "run-now:SCHEDULE:VALUE" for a
-- run-now): else it could hold the key first and have the neighbour's JobRun name its run.
ALTER TABLE idempotency_keys ENABLE ROW LEVEL SECURITY;
CREATE POLICY kept_to_namespaces ON idempotency_keys
    USING ((SELECT sundial_login_namespaces()) IS NULL
           OR EXISTS (SELECT 1 FROM job_runs r WHERE r.id = idempotency_keys.run_id)
           OR EXISTS (SELECT 1 FROM finished_runs f WHERE f.id = idempotency_keys.run_id))
    WITH CHECK ((SELECT sundial_login_namespaces()) IS NULL
                OR (EXISTS (SELECT 1 FROM job_runs r WHERE r.id = idempotency_keys.run_id)
                    AND key NOT LIKE 'run-now:%'
                    AND (strpos(key, '/') = 0
                         OR split_part(key, '/', 1)
                            = ANY ((SELECT sundial_login_namespaces())::text[]))));

-- The dependents of a run are released (or failed) by whoever ends it, whatever their
-- namespace: these two run as the owner, so a login kept to its namespaces still releases
-- another namespace's run that waits on one of its own, and only on one of its own.

-- The runs of ``ids`` the session's login may see (all of them for a login not kept to
-- namespaces): what a function that runs as the owner may act on for its caller.
CREATE OR REPLACE FUNCTION sundial_own_runs(ids bigint[]) RETURNS TABLE (id bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT u.id FROM unnest(ids) AS u(id)
    WHERE (SELECT sundial_login_namespaces()) IS NULL
       OR EXISTS (SELECT 1 FROM job_runs r
                  WHERE r.id = u.id AND r.namespace = ANY ((SELECT sundial_login_namespaces())::text[]))
$$;

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
REVOKE EXECUTE ON FUNCTION sundial_release_dependents(bigint[]) FROM PUBLIC;

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
REVOKE EXECUTE ON FUNCTION sundial_fail_dependents(bigint[], text[]) FROM PUBLIC;
