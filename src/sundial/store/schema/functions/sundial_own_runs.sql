-- Current definition; last changed by migrations/0300_logins_kept_to_namespaces.sql.
-- The runs of ``ids`` the session's login may see (all of them for a login not kept to
-- namespaces): what a function that runs as the owner may act on for its caller.
CREATE OR REPLACE FUNCTION sundial_own_runs(ids bigint[]) RETURNS TABLE (id bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT u.id FROM unnest(ids) AS u(id)
    WHERE (SELECT sundial_login_namespaces()) IS NULL
       OR EXISTS (SELECT 1 FROM job_runs r
                  WHERE r.id = u.id AND r.namespace = ANY ((SELECT sundial_login_namespaces())::text[]))
$$;
