-- A login kept to namespaces (migration 0300, docs/adr/0068-logins-kept-to-namespaces.md)
-- now also reads only its namespaces' fires (which schedule fired when, and the run it made)
-- and quotas (another team's limit and active count are that team's business); the default
-- quota ('*') stays readable, it applies to every namespace.

ALTER TABLE schedule_fires ENABLE ROW LEVEL SECURITY;
CREATE POLICY kept_to_namespaces ON schedule_fires
    USING ((SELECT sundial_login_namespaces()) IS NULL
           OR EXISTS (SELECT 1 FROM schedules s WHERE s.id = schedule_fires.schedule_id));

ALTER TABLE namespace_quotas ENABLE ROW LEVEL SECURITY;
CREATE POLICY kept_to_namespaces ON namespace_quotas
    USING ((SELECT sundial_login_namespaces()) IS NULL
           OR namespace = '*'
           OR namespace = ANY ((SELECT sundial_login_namespaces())::text[]));
