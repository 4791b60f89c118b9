-- Concurrency keys (docs/adr/0064-concurrency-keys.md): the jobs of a namespace that name the
-- same key share a limit of runs pending or running at once.
--
-- A job definition names its key and limit; its runs carry the key from their insert. A keyed
-- run never enters 'pending' on its own: it is inserted (or released from 'blocked', or
-- replayed) as 'scheduled', and promote_keyed.sql moves it to 'pending' only while its key
-- has room. The claim and the finish are untouched: a run holds its key's room from its
-- promotion until it ends. Nullable columns without defaults rewrite nothing.
ALTER TABLE job_definitions
    ADD COLUMN concurrency_key text CHECK (length(concurrency_key) BETWEEN 1 AND 253),
    ADD COLUMN concurrency_limit integer CHECK (concurrency_limit BETWEEN 1 AND 10000),
    ADD CONSTRAINT job_definitions_concurrency_check
        CHECK ((concurrency_key IS NULL) = (concurrency_limit IS NULL));

ALTER TABLE job_runs ADD COLUMN concurrency_key text;

-- promote_due.sql walks the waiting runs by run_at; keyed runs that are due but held by their
-- key would sit at the front of that walk on every pass, so they get an index of their own.
DROP INDEX job_runs_waiting_idx;
CREATE INDEX job_runs_waiting_idx ON job_runs (run_at)
    WHERE state IN ('scheduled', 'retry_wait') AND concurrency_key IS NULL;
CREATE INDEX job_runs_keyed_waiting_idx ON job_runs (run_at)
    WHERE state IN ('scheduled', 'retry_wait') AND concurrency_key IS NOT NULL;
-- The room a key has left: its runs pending or running, counted per pass.
CREATE INDEX job_runs_keyed_active_idx ON job_runs (namespace, concurrency_key)
    WHERE concurrency_key IS NOT NULL AND state IN ('pending', 'running');

-- A keyed child released by its last upstream run waits for its key like any other.
CREATE OR REPLACE FUNCTION sundial_release_dependents(upstream_ids bigint[])
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
