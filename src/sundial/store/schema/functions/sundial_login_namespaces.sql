-- Current definition; last changed by migrations/0300_logins_kept_to_namespaces.sql.
-- The namespaces the session's login is kept to; NULL when it is not listed.
CREATE OR REPLACE FUNCTION sundial_login_namespaces() RETURNS text[]
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT namespaces FROM login_namespaces WHERE login = session_user
$$;
