-- Quotas on the active runs of a namespace (store.quotas, 0270).
-- Part of the reference schema (see sundial.store's docstring): the current state after every
-- migration, as pg_dump prints it. Never applied to an installation; migrations are.

CREATE TABLE namespace_quotas (
    namespace text NOT NULL,
    max_active_runs integer NOT NULL,
    explicit boolean DEFAULT true NOT NULL,
    active_runs integer DEFAULT 0 NOT NULL,
    counted_at timestamp with time zone,
    CONSTRAINT namespace_quotas_max_active_runs_check CHECK ((max_active_runs >= 0)),
    CONSTRAINT namespace_quotas_namespace_check CHECK (((length(namespace) >= 1) AND (length(namespace) <= 253)))
);

ALTER TABLE namespace_quotas
    ADD CONSTRAINT namespace_quotas_pkey PRIMARY KEY (namespace);

ALTER TABLE namespace_quotas ENABLE ROW LEVEL SECURITY;

CREATE POLICY kept_to_namespaces ON namespace_quotas USING (((( SELECT sundial_login_namespaces() AS sundial_login_namespaces) IS NULL) OR (namespace = '*'::text) OR (namespace = ANY (( SELECT sundial_login_namespaces() AS sundial_login_namespaces)::text[]))));
