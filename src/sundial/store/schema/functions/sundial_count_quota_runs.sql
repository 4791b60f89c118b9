-- Current definition; last changed by migrations/0290_quota_recounted_when_full.sql.
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
