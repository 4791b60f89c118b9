-- The Redis hot queue's epochs, one per Redis server a queue was claimed on (0350).
-- Part of the reference schema (see sundial.store's docstring): the current state after every
-- migration, as pg_dump prints it. Never applied to an installation; migrations are.

CREATE TABLE hot_queue_epochs (
    epoch bigint NOT NULL,
    queue text NOT NULL,
    issued_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT hot_queue_epochs_queue_check CHECK (((length(queue) >= 1) AND (length(queue) <= 253)))
);

ALTER TABLE hot_queue_epochs ALTER COLUMN epoch ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME hot_queue_epochs_epoch_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY hot_queue_epochs
    ADD CONSTRAINT hot_queue_epochs_pkey PRIMARY KEY (epoch);
