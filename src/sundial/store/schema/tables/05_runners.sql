-- Runners and what they serve, so a run nobody can claim says why (store.runners, 0082).
-- Part of the reference schema (see sundial.store's docstring): the current state after every
-- migration, as pg_dump prints it. Never applied to an installation; migrations are.

CREATE TABLE runners (
    worker_id text NOT NULL,
    queues text[] NOT NULL,
    handlers jsonb NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    seen_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    namespaces text[],
    CONSTRAINT runners_handlers_check CHECK ((jsonb_typeof(handlers) = 'object'::text)),
    CONSTRAINT runners_worker_id_check CHECK (((length(worker_id) >= 1) AND (length(worker_id) <= 253)))
);

ALTER TABLE runners
    ADD CONSTRAINT runners_pkey PRIMARY KEY (worker_id);

-- Logins kept to namespaces (0310, 0330, docs/adr/0068-logins-kept-to-namespaces.md).
ALTER TABLE runners ENABLE ROW LEVEL SECURITY;

CREATE POLICY kept_to_namespaces_select ON runners FOR SELECT USING (((( SELECT sundial_login_namespaces() AS sundial_login_namespaces) IS NULL) OR (namespaces IS NULL) OR (namespaces && ( SELECT sundial_login_namespaces() AS sundial_login_namespaces)) OR (namespaces <@ ( SELECT sundial_login_namespaces() AS sundial_login_namespaces))));

CREATE POLICY kept_to_namespaces_insert ON runners FOR INSERT WITH CHECK ((((( SELECT sundial_login_namespaces() AS sundial_login_namespaces) IS NULL) OR (namespaces <@ ( SELECT sundial_login_namespaces() AS sundial_login_namespaces)))));

CREATE POLICY kept_to_namespaces_update ON runners FOR UPDATE USING ((((( SELECT sundial_login_namespaces() AS sundial_login_namespaces) IS NULL) OR (namespaces <@ ( SELECT sundial_login_namespaces() AS sundial_login_namespaces)))));

CREATE POLICY kept_to_namespaces_delete ON runners FOR DELETE USING ((((( SELECT sundial_login_namespaces() AS sundial_login_namespaces) IS NULL) OR (namespaces <@ ( SELECT sundial_login_namespaces() AS sundial_login_namespaces)))));
