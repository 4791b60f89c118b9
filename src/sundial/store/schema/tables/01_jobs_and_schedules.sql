-- Job definitions (one per ScheduledJob or inline JobRun job) and their schedules: what to
-- run and when.
-- Part of the reference schema (see sundial.store's docstring): the current state after every
-- migration, as pg_dump prints it. Never applied to an installation; migrations are.

CREATE TABLE job_definitions (
    id uuid NOT NULL,
    namespace text NOT NULL,
    name text NOT NULL,
    generation bigint DEFAULT 0 NOT NULL,
    handler text NOT NULL,
    execution_model text,
    queue text DEFAULT 'default'::text NOT NULL,
    priority smallint DEFAULT 1 NOT NULL,
    timeout_seconds integer,
    max_retries integer DEFAULT 3 NOT NULL,
    backoff_base_seconds double precision DEFAULT 1 NOT NULL,
    backoff_cap_seconds double precision DEFAULT 300 NOT NULL,
    dependency text,
    quarantine_after integer,
    pod_template jsonb,
    failure_policy jsonb DEFAULT '[]'::jsonb NOT NULL,
    successful_runs_history_limit integer DEFAULT 3 NOT NULL,
    failed_runs_history_limit integer DEFAULT 1 NOT NULL,
    active boolean DEFAULT true NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    start_timeout_seconds integer,
    oom_max_retries integer DEFAULT 2 NOT NULL,
    oom_memory_increase_percent integer,
    oom_max_memory_bytes bigint,
    pod_deletion_policy text DEFAULT 'Retry'::text NOT NULL,
    max_lost_leases integer DEFAULT 3 NOT NULL,
    concurrency_key text,
    concurrency_limit integer,
    CONSTRAINT job_definitions_backoff_base_seconds_check CHECK ((backoff_base_seconds >= (0)::double precision)),
    CONSTRAINT job_definitions_backoff_cap_seconds_check CHECK ((backoff_cap_seconds >= (0)::double precision)),
    CONSTRAINT job_definitions_concurrency_check CHECK (((concurrency_key IS NULL) = (concurrency_limit IS NULL))),
    CONSTRAINT job_definitions_concurrency_key_check CHECK (((length(concurrency_key) >= 1) AND (length(concurrency_key) <= 253))),
    CONSTRAINT job_definitions_concurrency_limit_check CHECK (((concurrency_limit >= 1) AND (concurrency_limit <= 10000))),
    CONSTRAINT job_definitions_execution_model_check CHECK ((execution_model = ANY (ARRAY['async'::text, 'thread'::text, 'process'::text, 'subprocess'::text, 'pod'::text]))),
    CONSTRAINT job_definitions_failed_runs_history_limit_check CHECK ((failed_runs_history_limit >= 0)),
    CONSTRAINT job_definitions_handler_check CHECK (((length(handler) >= 1) AND (length(handler) <= 253))),
    CONSTRAINT job_definitions_max_lost_leases_check CHECK (((max_lost_leases >= 0) AND (max_lost_leases <= 100))),
    CONSTRAINT job_definitions_max_retries_check CHECK ((max_retries >= 0)),
    CONSTRAINT job_definitions_name_check CHECK (((length(name) >= 1) AND (length(name) <= 253))),
    CONSTRAINT job_definitions_namespace_check CHECK (((length(namespace) >= 1) AND (length(namespace) <= 63))),
    CONSTRAINT job_definitions_oom_max_memory_bytes_check CHECK ((oom_max_memory_bytes > 0)),
    CONSTRAINT job_definitions_oom_max_retries_check CHECK (((oom_max_retries >= 0) AND (oom_max_retries <= 100))),
    CONSTRAINT job_definitions_oom_memory_increase_percent_check CHECK (((oom_memory_increase_percent >= 0) AND (oom_memory_increase_percent <= 1000))),
    CONSTRAINT job_definitions_pod_deletion_policy_check CHECK ((pod_deletion_policy = ANY (ARRAY['Retry'::text, 'Cancel'::text]))),
    CONSTRAINT job_definitions_pod_template_check CHECK (((NOT (execution_model IS DISTINCT FROM 'pod'::text)) = (pod_template IS NOT NULL))),
    CONSTRAINT job_definitions_priority_check CHECK (((priority >= 0) AND (priority <= 9))),
    CONSTRAINT job_definitions_quarantine_after_check CHECK ((quarantine_after > 0)),
    CONSTRAINT job_definitions_queue_check CHECK (((length(queue) >= 1) AND (length(queue) <= 63))),
    CONSTRAINT job_definitions_start_timeout_seconds_check CHECK ((start_timeout_seconds > 0)),
    CONSTRAINT job_definitions_successful_runs_history_limit_check CHECK ((successful_runs_history_limit >= 0)),
    CONSTRAINT job_definitions_timeout_seconds_check CHECK ((timeout_seconds > 0))
);

CREATE TABLE schedules (
    id uuid NOT NULL,
    job_id uuid NOT NULL,
    cron text,
    interval_seconds integer,
    timezone text DEFAULT 'UTC'::text NOT NULL,
    next_fire_time timestamp with time zone NOT NULL,
    spread_seconds integer DEFAULT 0 NOT NULL,
    concurrency_policy text DEFAULT 'Forbid'::text NOT NULL,
    missed_fire_policy text DEFAULT 'Coalesce'::text NOT NULL,
    max_backfill integer DEFAULT 10 NOT NULL,
    starting_deadline_seconds integer,
    suspended boolean DEFAULT false NOT NULL,
    quarantined boolean DEFAULT false NOT NULL,
    consecutive_failures integer DEFAULT 0 NOT NULL,
    active boolean DEFAULT true NOT NULL,
    last_fire_time timestamp with time zone,
    last_successful_time timestamp with time zone,
    fires_total bigint DEFAULT 0 NOT NULL,
    fires_coalesced bigint DEFAULT 0 NOT NULL,
    fires_skipped bigint DEFAULT 0 NOT NULL,
    fires_backfilled bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    stalled_reason text,
    last_error text,
    quarantine_message text,
    failures_counted_after bigint DEFAULT 0 NOT NULL,
    spread_offset_ms integer DEFAULT 0 NOT NULL,
    run_args jsonb DEFAULT '{}'::jsonb NOT NULL,
    dst_skipped_time text DEFAULT 'AtTransition'::text NOT NULL,
    dst_repeated_time text DEFAULT 'First'::text NOT NULL,
    buffered_fire_time timestamp with time zone,
    CONSTRAINT schedules_check CHECK (((cron IS NULL) <> (interval_seconds IS NULL))),
    CONSTRAINT schedules_concurrency_policy_check CHECK ((concurrency_policy = ANY (ARRAY['Forbid'::text, 'Allow'::text, 'Replace'::text, 'BufferOne'::text]))),
    CONSTRAINT schedules_consecutive_failures_check CHECK ((consecutive_failures >= 0)),
    CONSTRAINT schedules_dst_repeated_time_check CHECK ((dst_repeated_time = ANY (ARRAY['First'::text, 'Second'::text, 'Both'::text]))),
    CONSTRAINT schedules_dst_skipped_time_check CHECK ((dst_skipped_time = ANY (ARRAY['AtTransition'::text, 'Skip'::text]))),
    CONSTRAINT schedules_interval_seconds_check CHECK ((interval_seconds > 0)),
    CONSTRAINT schedules_last_error_check CHECK ((octet_length(last_error) <= 8192)),
    CONSTRAINT schedules_max_backfill_check CHECK ((max_backfill >= 0)),
    CONSTRAINT schedules_missed_fire_policy_check CHECK ((missed_fire_policy = ANY (ARRAY['Coalesce'::text, 'Backfill'::text, 'Skip'::text]))),
    CONSTRAINT schedules_run_args_check CHECK ((octet_length((run_args)::text) <= 131072)),
    CONSTRAINT schedules_spread_offset_ms_check CHECK ((spread_offset_ms >= 0)),
    CONSTRAINT schedules_spread_seconds_check CHECK ((spread_seconds >= 0)),
    CONSTRAINT schedules_starting_deadline_seconds_check CHECK ((starting_deadline_seconds > 0))
);

ALTER TABLE job_definitions
    ADD CONSTRAINT job_definitions_pkey PRIMARY KEY (id);

ALTER TABLE schedules
    ADD CONSTRAINT schedules_pkey PRIMARY KEY (id);

CREATE UNIQUE INDEX job_definitions_active_name_idx ON job_definitions USING btree (namespace, name) WHERE active;

CREATE INDEX schedules_buffered_idx ON schedules USING btree (job_id) WHERE (buffered_fire_time IS NOT NULL);

CREATE INDEX schedules_due_idx ON schedules USING btree (next_fire_time) WHERE (active AND (NOT suspended) AND (NOT quarantined));

CREATE INDEX schedules_job_idx ON schedules USING btree (job_id);

ALTER TABLE schedules
    ADD CONSTRAINT schedules_job_id_fkey FOREIGN KEY (job_id) REFERENCES job_definitions(id) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--

-- Logins kept to namespaces (0310, docs/adr/0068-logins-kept-to-namespaces.md).
ALTER TABLE job_definitions ENABLE ROW LEVEL SECURITY;

CREATE POLICY kept_to_namespaces ON job_definitions USING ((((( SELECT sundial_login_namespaces() AS sundial_login_namespaces) IS NULL) OR (namespace = ANY (( SELECT sundial_login_namespaces() AS sundial_login_namespaces)::text[])))));

ALTER TABLE schedules ENABLE ROW LEVEL SECURITY;

CREATE POLICY kept_to_namespaces ON schedules USING ((((( SELECT sundial_login_namespaces() AS sundial_login_namespaces) IS NULL) OR (EXISTS ( SELECT 1
   FROM job_definitions j
  WHERE (j.id = schedules.job_id))))));
