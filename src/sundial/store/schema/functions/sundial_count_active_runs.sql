-- Current definition; last changed by migrations/0270_active_run_quotas.sql.
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
