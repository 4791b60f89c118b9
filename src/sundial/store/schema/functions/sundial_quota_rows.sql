-- Current definition; last changed by migrations/0270_active_run_quotas.sql.
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
