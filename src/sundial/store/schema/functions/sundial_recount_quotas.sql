-- Current definition; last changed by migrations/0290_quota_recounted_when_full.sql.
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
