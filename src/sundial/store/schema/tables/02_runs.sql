-- The hot run table and what guards it: live runs and recently finished ones, their
-- dependency edges, and the keys that make a fire or a submission happen once. See
-- docs/adr/0001-run-store-schema.md.
-- Part of the reference schema (see sundial.store's docstring): the current state after every
-- migration, as pg_dump prints it. Never applied to an installation; migrations are.

CREATE TABLE job_runs (
    id bigint NOT NULL,
    job_id uuid NOT NULL,
    schedule_id uuid,
    fire_time timestamp with time zone,
    idempotency_key text,
    queue text NOT NULL,
    handler text NOT NULL,
    execution_model text,
    timeout_seconds integer,
    max_retries integer NOT NULL,
    backoff_base_seconds double precision NOT NULL,
    backoff_cap_seconds double precision NOT NULL,
    state text NOT NULL,
    priority smallint NOT NULL,
    run_at timestamp with time zone NOT NULL,
    dispatch_key double precision NOT NULL,
    attempt integer DEFAULT 0 NOT NULL,
    retries_used integer DEFAULT 0 NOT NULL,
    infra_retries_used integer DEFAULT 0 NOT NULL,
    lease_expiries integer DEFAULT 0 NOT NULL,
    lease_owner text,
    lease_until timestamp with time zone,
    cancel_requested boolean DEFAULT false NOT NULL,
    args jsonb DEFAULT '{}'::jsonb NOT NULL,
    failure_reason text,
    last_error text,
    pending_dependencies integer DEFAULT 0 NOT NULL,
    has_dependents boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    pod_name text,
    pod_exit_code integer,
    pod_reason text,
    oom_max_retries integer DEFAULT 2 NOT NULL,
    oom_retries_used integer DEFAULT 0 NOT NULL,
    cancel_reason text,
    max_lost_leases integer DEFAULT 3 NOT NULL,
    lost_leases_used integer DEFAULT 0 NOT NULL,
    unclaimable_reason text,
    failure_detail text,
    namespace text,
    pod_uid text,
    concurrency_key text,
    hot_epoch bigint,
    CONSTRAINT job_runs_args_check CHECK ((octet_length((args)::text) <= 131072)),
    CONSTRAINT job_runs_attempt_check CHECK ((attempt >= 0)),
    CONSTRAINT job_runs_cancel_reason_check CHECK ((octet_length(cancel_reason) <= 8192)),
    CONSTRAINT job_runs_check CHECK (((state = ANY (ARRAY['completed'::text, 'failed'::text, 'timed_out'::text, 'cancelled'::text, 'dead_lettered'::text])) = (finished_at IS NOT NULL))),
    CONSTRAINT job_runs_check1 CHECK (((state <> 'running'::text) OR ((lease_owner IS NOT NULL) AND (lease_until IS NOT NULL)))),
    CONSTRAINT job_runs_check2 CHECK (((state <> 'blocked'::text) OR (pending_dependencies > 0))),
    CONSTRAINT job_runs_execution_model_check CHECK ((execution_model = ANY (ARRAY['async'::text, 'thread'::text, 'process'::text, 'subprocess'::text, 'pod'::text]))),
    CONSTRAINT job_runs_failure_detail_check CHECK (((length(failure_detail) >= 1) AND (length(failure_detail) <= 64))),
    CONSTRAINT job_runs_idempotency_key_check CHECK (((length(idempotency_key) >= 1) AND (length(idempotency_key) <= 256))),
    CONSTRAINT job_runs_infra_retries_used_check CHECK ((infra_retries_used >= 0)),
    CONSTRAINT job_runs_last_error_check CHECK ((octet_length(last_error) <= 8192)),
    CONSTRAINT job_runs_lease_expiries_check CHECK ((lease_expiries >= 0)),
    CONSTRAINT job_runs_lost_leases_used_check CHECK ((lost_leases_used >= 0)),
    CONSTRAINT job_runs_max_lost_leases_check CHECK ((max_lost_leases >= 0)),
    CONSTRAINT job_runs_max_retries_check CHECK ((max_retries >= 0)),
    CONSTRAINT job_runs_oom_max_retries_check CHECK ((oom_max_retries >= 0)),
    CONSTRAINT job_runs_oom_retries_used_check CHECK ((oom_retries_used >= 0)),
    CONSTRAINT job_runs_pending_dependencies_check CHECK ((pending_dependencies >= 0)),
    CONSTRAINT job_runs_pod_name_check CHECK (((length(pod_name) >= 1) AND (length(pod_name) <= 253))),
    CONSTRAINT job_runs_pod_reason_check CHECK (((length(pod_reason) >= 1) AND (length(pod_reason) <= 256))),
    CONSTRAINT job_runs_pod_uid_check CHECK (((length(pod_uid) >= 1) AND (length(pod_uid) <= 64))),
    CONSTRAINT job_runs_priority_check CHECK (((priority >= 0) AND (priority <= 9))),
    CONSTRAINT job_runs_retries_used_check CHECK ((retries_used >= 0)),
    CONSTRAINT job_runs_state_check CHECK ((state = ANY (ARRAY['scheduled'::text, 'blocked'::text, 'pending'::text, 'running'::text, 'retry_wait'::text, 'completed'::text, 'failed'::text, 'timed_out'::text, 'cancelled'::text, 'dead_lettered'::text]))),
    CONSTRAINT job_runs_timeout_seconds_check CHECK ((timeout_seconds > 0)),
    CONSTRAINT job_runs_unclaimable_reason_check CHECK ((octet_length(unclaimable_reason) <= 2048))
)
WITH (autovacuum_vacuum_scale_factor='0.01', autovacuum_analyze_scale_factor='0.02', fillfactor='80');

CREATE TABLE idempotency_keys (
    key text NOT NULL,
    args_hash text NOT NULL,
    run_id bigint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT idempotency_keys_key_check CHECK (((length(key) >= 1) AND (length(key) <= 256)))
);

CREATE TABLE job_run_deps (
    run_id bigint NOT NULL,
    depends_on bigint NOT NULL,
    CONSTRAINT job_run_deps_check CHECK ((run_id <> depends_on))
);

ALTER TABLE job_runs ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME job_runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE schedule_fires (
    schedule_id uuid NOT NULL,
    fire_time timestamp with time zone NOT NULL,
    run_id bigint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (key);

ALTER TABLE job_run_deps
    ADD CONSTRAINT job_run_deps_pkey PRIMARY KEY (run_id, depends_on);

ALTER TABLE job_runs
    ADD CONSTRAINT job_runs_pkey PRIMARY KEY (id);

ALTER TABLE schedule_fires
    ADD CONSTRAINT schedule_fires_pkey PRIMARY KEY (schedule_id, fire_time);

CREATE INDEX idempotency_keys_created_idx ON idempotency_keys USING btree (created_at);

CREATE INDEX job_run_deps_parent_idx ON job_run_deps USING btree (depends_on);

CREATE INDEX job_runs_dispatch_idx ON job_runs USING btree (dispatch_key) WHERE (state = 'pending'::text);

CREATE INDEX job_runs_finished_by_schedule_idx ON job_runs USING btree (schedule_id, finished_at) WHERE ((schedule_id IS NOT NULL) AND (finished_at IS NOT NULL));

CREATE INDEX job_runs_finished_idx ON job_runs USING btree (finished_at) WHERE (finished_at IS NOT NULL);

CREATE INDEX job_runs_keyed_active_idx ON job_runs USING btree (namespace, concurrency_key) WHERE ((concurrency_key IS NOT NULL) AND (state = ANY (ARRAY['pending'::text, 'running'::text])));

CREATE INDEX job_runs_keyed_waiting_idx ON job_runs USING btree (run_at) WHERE ((state = ANY (ARRAY['scheduled'::text, 'retry_wait'::text])) AND (concurrency_key IS NOT NULL));

CREATE INDEX job_runs_pending_by_queue_idx ON job_runs USING btree (namespace, queue, dispatch_key) WHERE (state = 'pending'::text);

CREATE INDEX job_runs_running_by_lease_idx ON job_runs USING btree (lease_until) WHERE (state = 'running'::text);

CREATE INDEX job_runs_unclaimable_idx ON job_runs USING btree (queue, handler) WHERE ((state = 'pending'::text) AND (unclaimable_reason IS NOT NULL));

CREATE INDEX job_runs_unfinished_by_schedule_idx ON job_runs USING btree (schedule_id) WHERE ((schedule_id IS NOT NULL) AND (finished_at IS NULL));

CREATE INDEX job_runs_waiting_idx ON job_runs USING btree (run_at) WHERE ((state = ANY (ARRAY['scheduled'::text, 'retry_wait'::text])) AND (concurrency_key IS NULL));

CREATE INDEX schedule_fires_created_idx ON schedule_fires USING btree (created_at);

CREATE TRIGGER job_runs_attempt_only_grows BEFORE UPDATE OF attempt ON job_runs FOR EACH ROW WHEN ((new.attempt < old.attempt)) EXECUTE FUNCTION sundial_attempt_only_grows();

CREATE TRIGGER job_runs_count_quota AFTER INSERT ON job_runs REFERENCING NEW TABLE AS new_runs FOR EACH STATEMENT EXECUTE FUNCTION sundial_count_quota_runs();

CREATE TRIGGER job_runs_notify_pending AFTER INSERT ON job_runs REFERENCING NEW TABLE AS new_runs FOR EACH STATEMENT EXECUTE FUNCTION sundial_notify_pending_runs();

ALTER TABLE job_runs
    ADD CONSTRAINT job_runs_job_id_fkey FOREIGN KEY (job_id) REFERENCES job_definitions(id);

ALTER TABLE job_runs
    ADD CONSTRAINT job_runs_schedule_id_fkey FOREIGN KEY (schedule_id) REFERENCES schedules(id) ON DELETE SET NULL;

-- Logins kept to namespaces (0300, docs/adr/0068-logins-kept-to-namespaces.md).
ALTER TABLE job_runs ENABLE ROW LEVEL SECURITY;

CREATE POLICY kept_to_namespaces ON job_runs USING (((( SELECT sundial_login_namespaces() AS sundial_login_namespaces) IS NULL) OR (namespace = ANY (( SELECT sundial_login_namespaces() AS sundial_login_namespaces)::text[]))));

ALTER TABLE schedule_fires ENABLE ROW LEVEL SECURITY;

CREATE POLICY kept_to_namespaces ON schedule_fires USING (((( SELECT sundial_login_namespaces() AS sundial_login_namespaces) IS NULL) OR (EXISTS ( SELECT 1
   FROM schedules s
  WHERE (s.id = schedule_fires.schedule_id)))));

ALTER TABLE job_run_deps ENABLE ROW LEVEL SECURITY;

CREATE POLICY kept_to_namespaces ON job_run_deps USING (((( SELECT sundial_login_namespaces() AS sundial_login_namespaces) IS NULL) OR (EXISTS ( SELECT 1
   FROM job_runs r
  WHERE (r.id = job_run_deps.run_id)))));
