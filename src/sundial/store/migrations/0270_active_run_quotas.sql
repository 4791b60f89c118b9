-- A quota on the active runs of a namespace (docs/adr/0063-active-run-quotas.md).
--
-- namespace_quotas holds one row per namespace with a quota, and the row '*' for the default
-- every other namespace gets (a Kubernetes namespace name never holds '*'). The operator
-- writes max_active_runs from its configuration; explicit says the row was configured by
-- name, not made from the default the first time one of the namespace's runs was inserted.
-- active_runs is counted up by every insert (the trigger below, whoever inserts) and set to
-- the true count by the maintenance pass, since finished runs are never counted down: the
-- finish path, the hottest, stays untouched, and between two passes the count can only be
-- too high, never too low, so a quota is never exceeded.
CREATE TABLE namespace_quotas (
    namespace text PRIMARY KEY CHECK (length(namespace) BETWEEN 1 AND 253),
    max_active_runs integer NOT NULL CHECK (max_active_runs >= 0),
    explicit boolean NOT NULL DEFAULT true,
    active_runs integer NOT NULL DEFAULT 0,
    counted_at timestamptz
);

-- The rows of ``namespaces`` (made from the default if there is one and they have none),
-- locked in namespace order, so two inserts over the same namespaces never deadlock. A row
-- made here starts at the namespace's true count, which includes rows this transaction
-- inserted already; ``made`` says which rows those are.
CREATE OR REPLACE FUNCTION sundial_quota_rows(namespaces text[])
RETURNS TABLE (namespace text, max_active_runs integer, active_runs integer, made boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    fallback integer := (SELECT q.max_active_runs FROM namespace_quotas q WHERE q.namespace = '*');
    created text[] := '{}';
BEGIN
    IF fallback IS NOT NULL THEN
        WITH inserted AS (
            INSERT INTO namespace_quotas AS q (namespace, max_active_runs, explicit, active_runs, counted_at)
            SELECT n.ns, fallback, false,
                   (SELECT count(*) FROM job_runs r
                    WHERE r.namespace = n.ns
                      AND r.state IN ('scheduled', 'blocked', 'pending', 'running', 'retry_wait')),
                   now()
            FROM (SELECT DISTINCT u.ns FROM unnest(namespaces) AS u(ns)
                  WHERE u.ns IS NOT NULL AND u.ns <> '*' ORDER BY u.ns) n
            ON CONFLICT ON CONSTRAINT namespace_quotas_pkey DO NOTHING
            RETURNING q.namespace
        )
        SELECT coalesce(array_agg(i.namespace), '{}') INTO created FROM inserted i;
    END IF;
    RETURN QUERY
        SELECT q.namespace, q.max_active_runs, q.active_runs, q.namespace = ANY(created)
        FROM namespace_quotas q
        WHERE q.namespace = ANY(namespaces) AND q.namespace <> '*'
        ORDER BY q.namespace
        FOR UPDATE;
END
$$;
REVOKE EXECUTE ON FUNCTION sundial_quota_rows(text[]) FROM PUBLIC;

-- Count every insert's active runs against their namespaces' quotas; refuse the statement
-- if one would pass its quota. With no quota configured this is one probe of an empty table.
CREATE OR REPLACE FUNCTION sundial_count_quota_runs() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    quota record;
    added integer;
    active integer;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM namespace_quotas) THEN
        RETURN NULL;
    END IF;
    FOR quota IN
        SELECT * FROM sundial_quota_rows(ARRAY(
            SELECT DISTINCT n.namespace FROM new_runs n
            WHERE n.namespace IS NOT NULL
              AND n.state IN ('scheduled', 'blocked', 'pending', 'running', 'retry_wait')))
    LOOP
        added := (SELECT count(*) FROM new_runs n
                  WHERE n.namespace = quota.namespace
                    AND n.state IN ('scheduled', 'blocked', 'pending', 'running', 'retry_wait'));
        active := quota.active_runs;
        IF NOT quota.made THEN
            active := active + added;
            UPDATE namespace_quotas q SET active_runs = active WHERE q.namespace = quota.namespace;
        END IF;
        IF active > quota.max_active_runs THEN
            RAISE EXCEPTION 'namespace % may hold % active runs; these % would make %',
                quota.namespace, quota.max_active_runs, added, active
                USING ERRCODE = 'check_violation', CONSTRAINT = 'namespace_quotas_active_runs',
                      DETAIL = format('%s|%s|%s|%s', quota.namespace, quota.max_active_runs,
                                      active - added, added);
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;

CREATE TRIGGER job_runs_count_quota AFTER INSERT ON job_runs
    REFERENCING NEW TABLE AS new_runs
    FOR EACH STATEMENT EXECUTE FUNCTION sundial_count_quota_runs();

-- The maintenance pass: every quota row set to its namespace's true count. The rows are
-- locked first and counted after, in a statement of its own: an insert that counted itself
-- up has committed by then and is in the count; one that has not counted yet adds itself
-- after. One scan of the live runs, whatever the number of quotas.
CREATE OR REPLACE FUNCTION sundial_count_active_runs() RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    counted integer;
BEGIN
    PERFORM 1 FROM namespace_quotas q WHERE q.namespace <> '*' ORDER BY q.namespace FOR UPDATE;
    WITH live AS (
        SELECT r.namespace, count(*) AS runs
        FROM job_runs r
        WHERE r.namespace IN (SELECT q.namespace FROM namespace_quotas q)
          AND r.state IN ('scheduled', 'blocked', 'pending', 'running', 'retry_wait')
        GROUP BY r.namespace
    )
    UPDATE namespace_quotas q
    SET active_runs = coalesce((SELECT l.runs FROM live l WHERE l.namespace = q.namespace), 0),
        counted_at = now()
    WHERE q.namespace <> '*';
    GET DIAGNOSTICS counted = ROW_COUNT;
    RETURN counted;
END
$$;
REVOKE EXECUTE ON FUNCTION sundial_count_active_runs() FROM PUBLIC;
