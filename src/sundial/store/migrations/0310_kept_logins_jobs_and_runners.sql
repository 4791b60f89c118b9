-- A login kept to namespaces (migration 0300, docs/adr/0068-logins-kept-to-namespaces.md)
-- now also reads only its namespaces' jobs and schedules (their Pod templates and default
-- arguments), and writes only the runner announcements and circuits of runners that serve
-- only its namespaces: a fake announcement or an opened circuit would mislead the other
-- runners' "unclaimable" reasons and the ScheduledJobs' Degraded condition. Announcements and
-- circuits stay readable by all: they name handlers and dependencies, not runs.

ALTER TABLE job_definitions ENABLE ROW LEVEL SECURITY;
CREATE POLICY kept_to_namespaces ON job_definitions
    USING ((SELECT sundial_login_namespaces()) IS NULL
           OR namespace = ANY ((SELECT sundial_login_namespaces())::text[]));

ALTER TABLE schedules ENABLE ROW LEVEL SECURITY;
CREATE POLICY kept_to_namespaces ON schedules
    USING ((SELECT sundial_login_namespaces()) IS NULL
           OR EXISTS (SELECT 1 FROM job_definitions j WHERE j.id = schedules.job_id));

ALTER TABLE runners ENABLE ROW LEVEL SECURITY;
CREATE POLICY read_by_all ON runners FOR SELECT USING (true);
CREATE POLICY kept_to_namespaces_insert ON runners FOR INSERT
    WITH CHECK ((SELECT sundial_login_namespaces()) IS NULL
                OR namespaces <@ (SELECT sundial_login_namespaces())::text[]);
CREATE POLICY kept_to_namespaces_update ON runners FOR UPDATE
    USING ((SELECT sundial_login_namespaces()) IS NULL
           OR namespaces <@ (SELECT sundial_login_namespaces())::text[]);
CREATE POLICY kept_to_namespaces_delete ON runners FOR DELETE
    USING ((SELECT sundial_login_namespaces()) IS NULL
           OR namespaces <@ (SELECT sundial_login_namespaces())::text[]);

ALTER TABLE circuits ENABLE ROW LEVEL SECURITY;
CREATE POLICY read_by_all ON circuits FOR SELECT USING (true);
CREATE POLICY kept_to_namespaces_insert ON circuits FOR INSERT
    WITH CHECK ((SELECT sundial_login_namespaces()) IS NULL
                OR EXISTS (SELECT 1 FROM runners r
                           WHERE r.worker_id = circuits.worker_id
                             AND r.namespaces <@ (SELECT sundial_login_namespaces())::text[]));
CREATE POLICY kept_to_namespaces_update ON circuits FOR UPDATE
    USING ((SELECT sundial_login_namespaces()) IS NULL
           OR EXISTS (SELECT 1 FROM runners r
                      WHERE r.worker_id = circuits.worker_id
                        AND r.namespaces <@ (SELECT sundial_login_namespaces())::text[]));
CREATE POLICY kept_to_namespaces_delete ON circuits FOR DELETE
    USING ((SELECT sundial_login_namespaces()) IS NULL
           OR EXISTS (SELECT 1 FROM runners r
                      WHERE r.worker_id = circuits.worker_id
                        AND r.namespaces <@ (SELECT sundial_login_namespaces())::text[]));
