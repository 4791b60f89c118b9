-- A full quota counts its namespace again before it refuses (docs/adr/0063-active-run-quotas.md).
--
-- Ending a run never counts it down, so between two maintenance passes a quota's count can be
-- too high; with no maintainer running (runners with --maintenance alone) nobody counted again
-- and a full quota stayed full. Now an insert or a fire that finds its namespace over the
-- quota sets the count to the truth first, at most once a second per namespace (counted_at),
-- so a flood of refused submissions costs one scan of the live runs a second, not one each.
-- The row is locked by the caller, so the count is exact: an insert that counted itself up
-- has committed and is in it, one that has not adds itself after.

-- Set the counts of ``namespaces`` counted more than ``older_than`` ago to the truth (the
-- runs that have not ended, the caller's own uncommitted inserts included). Returns every one
-- of ``namespaces`` that has a quota, with its count and whether it was counted now. Locks
-- the rows, in namespace order as every other writer of them.
CREATE OR REPLACE FUNCTION sundial_recount_quotas(namespaces text[], older_than interval)
RETURNS TABLE (namespace text, active_runs integer, recounted boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM 1 FROM namespace_quotas q
    WHERE q.namespace = ANY(namespaces) AND q.namespace <> '*'
    ORDER BY q.namespace FOR UPDATE;
    RETURN QUERY
        WITH counted AS (
            UPDATE namespace_quotas q
            SET active_runs = (SELECT count(*) FROM job_runs r
                               WHERE r.namespace = q.namespace
                                 AND r.state IN ('scheduled', 'blocked', 'pending', 'running',
                                                 'retry_wait')),
                counted_at = clock_timestamp()
            WHERE q.namespace = ANY(namespaces) AND q.namespace <> '*'
              AND (q.counted_at IS NULL OR q.counted_at < clock_timestamp() - older_than)
            RETURNING q.namespace, q.active_runs
        )
        SELECT q.namespace, coalesce(c.active_runs, q.active_runs), c.namespace IS NOT NULL
        FROM namespace_quotas q LEFT JOIN counted c ON c.namespace = q.namespace
        WHERE q.namespace = ANY(namespaces) AND q.namespace <> '*'
        ORDER BY q.namespace;
END
$$;
REVOKE EXECUTE ON FUNCTION sundial_recount_quotas(text[], interval) FROM PUBLIC;

-- Count every insert's active runs against their namespaces' quotas; a namespace the insert
-- would take past its quota is counted again (at most once a second) and refused only if
-- the true count is past it too. With no quota configured this is one probe of an empty table.
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
            IF active > quota.max_active_runs THEN
                -- A recount sees this statement's rows: it is the new count as it stands.
                SELECT CASE WHEN r.recounted THEN r.active_runs ELSE active END INTO active
                FROM sundial_recount_quotas(ARRAY[quota.namespace], interval '1 second') r;
            END IF;
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
