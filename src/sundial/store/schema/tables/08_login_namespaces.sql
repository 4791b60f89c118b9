-- Logins kept to the runs of some namespaces (store.roles.keep_to_namespaces, 0300); the
-- policies that read it stand beside the tables they keep.
-- Part of the reference schema (see sundial.store's docstring): the current state after every
-- migration, as pg_dump prints it. Never applied to an installation; migrations are.

CREATE TABLE login_namespaces (
    login text NOT NULL,
    namespaces text[] NOT NULL,
    CONSTRAINT login_namespaces_login_check CHECK (((length(login) >= 1) AND (length(login) <= 63)))
);

ALTER TABLE login_namespaces
    ADD CONSTRAINT login_namespaces_pkey PRIMARY KEY (login);
