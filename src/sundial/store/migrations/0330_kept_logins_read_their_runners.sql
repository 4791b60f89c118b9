-- A login kept to namespaces (migration 0300, docs/adr/0068-logins-kept-to-namespaces.md)
-- now also reads only the announcements of runners that serve one of its namespaces (or every
-- namespace), and only those runners' circuits: another team's runners, the namespaces they
-- serve, their handlers and the dependencies whose circuits they keep are that team's.
-- A runner's maintenance pass still sees every runner that could claim its runs, so its
-- "unclaimable" reasons do not change (mark_unclaimable_runs.sql reads those runners only).

DROP POLICY read_by_all ON runners;
CREATE POLICY kept_to_namespaces_select ON runners FOR SELECT
    USING ((SELECT sundial_login_namespaces()) IS NULL
           OR namespaces IS NULL
           OR namespaces && (SELECT sundial_login_namespaces())::text[]
           OR namespaces <@ (SELECT sundial_login_namespaces())::text[]);

DROP POLICY read_by_all ON circuits;
CREATE POLICY kept_to_namespaces_select ON circuits FOR SELECT
    USING ((SELECT sundial_login_namespaces()) IS NULL
           OR EXISTS (SELECT 1 FROM runners r WHERE r.worker_id = circuits.worker_id));
