-- The Redis hot queue's outbox: runs that became pending, for the relay to move to Redis
-- (0360). Its triggers are disabled unless the hot queue is on Redis.
-- Part of the reference schema (see sundial.store's docstring): the current state after every
-- migration, as pg_dump prints it. Never applied to an installation; migrations are.

CREATE TABLE hot_queue_outbox (
    id bigint NOT NULL,
    run_id bigint NOT NULL,
    namespace text,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE hot_queue_outbox ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME hot_queue_outbox_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY hot_queue_outbox
    ADD CONSTRAINT hot_queue_outbox_pkey PRIMARY KEY (id);

CREATE TRIGGER job_runs_outbox_inserted AFTER INSERT ON job_runs REFERENCING NEW TABLE AS new_runs FOR EACH STATEMENT EXECUTE FUNCTION sundial_outbox_inserted_runs();

ALTER TABLE job_runs DISABLE TRIGGER job_runs_outbox_inserted;

CREATE TRIGGER job_runs_outbox_pending AFTER UPDATE OF state ON job_runs FOR EACH ROW WHEN (((new.state = 'pending'::text) AND (old.state <> 'pending'::text))) EXECUTE FUNCTION sundial_outbox_pending_run();

ALTER TABLE job_runs DISABLE TRIGGER job_runs_outbox_pending;

-- Logins kept to namespaces relay only their entries (docs/adr/0068-logins-kept-to-namespaces.md).
ALTER TABLE hot_queue_outbox ENABLE ROW LEVEL SECURITY;

CREATE POLICY kept_to_namespaces ON hot_queue_outbox USING (((( SELECT sundial_login_namespaces() AS sundial_login_namespaces) IS NULL) OR (namespace = ANY (( SELECT sundial_login_namespaces() AS sundial_login_namespaces)::text[]))));
