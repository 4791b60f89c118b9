-- Leader leases: one holder per name (the trigger loop, the pod launcher).
-- Part of the reference schema (see sundial.store's docstring): the current state after every
-- migration, as pg_dump prints it. Never applied to an installation; migrations are.

CREATE TABLE leader_leases (
    name text NOT NULL,
    holder text NOT NULL,
    epoch bigint DEFAULT 1 NOT NULL,
    acquired_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

ALTER TABLE leader_leases
    ADD CONSTRAINT leader_leases_pkey PRIMARY KEY (name);
