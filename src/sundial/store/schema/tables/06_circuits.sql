-- Circuit breaker state per runner and dependency (store.circuits, 0150).
-- Part of the reference schema (see sundial.store's docstring): the current state after every
-- migration, as pg_dump prints it. Never applied to an installation; migrations are.

CREATE TABLE circuits (
    worker_id text NOT NULL,
    dependency text NOT NULL,
    state text NOT NULL,
    since timestamp with time zone NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT circuits_dependency_check CHECK (((length(dependency) >= 1) AND (length(dependency) <= 253))),
    CONSTRAINT circuits_state_check CHECK ((state = ANY (ARRAY['closed'::text, 'open'::text, 'half_open'::text])))
);

ALTER TABLE circuits
    ADD CONSTRAINT circuits_pkey PRIMARY KEY (worker_id, dependency);

ALTER TABLE circuits
    ADD CONSTRAINT circuits_worker_id_fkey FOREIGN KEY (worker_id) REFERENCES runners(worker_id) ON DELETE CASCADE;

-- Logins kept to namespaces (0310, 0330, docs/adr/0068-logins-kept-to-namespaces.md).
ALTER TABLE circuits ENABLE ROW LEVEL SECURITY;

CREATE POLICY kept_to_namespaces_select ON circuits FOR SELECT USING (((( SELECT sundial_login_namespaces() AS sundial_login_namespaces) IS NULL) OR (EXISTS ( SELECT 1
   FROM runners r
  WHERE (r.worker_id = circuits.worker_id)))));

CREATE POLICY kept_to_namespaces_insert ON circuits FOR INSERT WITH CHECK ((((( SELECT sundial_login_namespaces() AS sundial_login_namespaces) IS NULL) OR (EXISTS ( SELECT 1
   FROM runners r
  WHERE ((r.worker_id = circuits.worker_id) AND (r.namespaces <@ ( SELECT sundial_login_namespaces() AS sundial_login_namespaces))))))));

CREATE POLICY kept_to_namespaces_update ON circuits FOR UPDATE USING ((((( SELECT sundial_login_namespaces() AS sundial_login_namespaces) IS NULL) OR (EXISTS ( SELECT 1
   FROM runners r
  WHERE ((r.worker_id = circuits.worker_id) AND (r.namespaces <@ ( SELECT sundial_login_namespaces() AS sundial_login_namespaces))))))));

CREATE POLICY kept_to_namespaces_delete ON circuits FOR DELETE USING ((((( SELECT sundial_login_namespaces() AS sundial_login_namespaces) IS NULL) OR (EXISTS ( SELECT 1
   FROM runners r
  WHERE ((r.worker_id = circuits.worker_id) AND (r.namespaces <@ ( SELECT sundial_login_namespaces() AS sundial_login_namespaces))))))));
