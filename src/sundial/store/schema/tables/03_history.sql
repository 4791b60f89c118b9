-- History: finished runs and ended attempts in month partitions (retention is DROP PARTITION),
-- and the views over live and archived runs.
-- Part of the reference schema (see sundial.store's docstring): the current state after every
-- migration, as pg_dump prints it. Never applied to an installation; migrations are.

CREATE TABLE finished_runs (
    id bigint NOT NULL,
    job_id uuid NOT NULL,
    schedule_id uuid,
    fire_time timestamp with time zone,
    idempotency_key text,
    queue text NOT NULL,
    handler text NOT NULL,
    execution_model text,
    state text NOT NULL,
    priority smallint NOT NULL,
    run_at timestamp with time zone NOT NULL,
    attempt integer NOT NULL,
    retries_used integer NOT NULL,
    infra_retries_used integer NOT NULL,
    lease_expiries integer NOT NULL,
    lease_owner text,
    args jsonb NOT NULL,
    failure_reason text,
    last_error text,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    pod_name text,
    pod_exit_code integer,
    pod_reason text,
    oom_max_retries integer DEFAULT 2 NOT NULL,
    oom_retries_used integer DEFAULT 0 NOT NULL,
    failure_detail text,
    CONSTRAINT finished_runs_state_check CHECK ((state = ANY (ARRAY['completed'::text, 'failed'::text, 'timed_out'::text, 'cancelled'::text, 'dead_lettered'::text])))
)
PARTITION BY RANGE (finished_at);

CREATE VIEW all_runs AS
 SELECT job_runs.id,
    job_runs.job_id,
    job_runs.schedule_id,
    job_runs.fire_time,
    job_runs.idempotency_key,
    job_runs.queue,
    job_runs.handler,
    job_runs.state,
    job_runs.priority,
    job_runs.run_at,
    job_runs.attempt,
    job_runs.failure_reason,
    job_runs.last_error,
    job_runs.created_at,
    job_runs.started_at,
    job_runs.finished_at
   FROM job_runs
UNION ALL
 SELECT finished_runs.id,
    finished_runs.job_id,
    finished_runs.schedule_id,
    finished_runs.fire_time,
    finished_runs.idempotency_key,
    finished_runs.queue,
    finished_runs.handler,
    finished_runs.state,
    finished_runs.priority,
    finished_runs.run_at,
    finished_runs.attempt,
    finished_runs.failure_reason,
    finished_runs.last_error,
    finished_runs.created_at,
    finished_runs.started_at,
    finished_runs.finished_at
   FROM finished_runs;

CREATE VIEW dead_letters AS
 SELECT job_runs.id,
    job_runs.job_id,
    job_runs.queue,
    job_runs.handler,
    job_runs.attempt,
    job_runs.failure_reason,
    job_runs.last_error,
    job_runs.finished_at,
    false AS archived
   FROM job_runs
  WHERE (job_runs.state = 'dead_lettered'::text)
UNION ALL
 SELECT finished_runs.id,
    finished_runs.job_id,
    finished_runs.queue,
    finished_runs.handler,
    finished_runs.attempt,
    finished_runs.failure_reason,
    finished_runs.last_error,
    finished_runs.finished_at,
    true AS archived
   FROM finished_runs
  WHERE (finished_runs.state = 'dead_lettered'::text);

CREATE TABLE job_run_attempts (
    run_id bigint NOT NULL,
    attempt integer NOT NULL,
    worker text,
    started_at timestamp with time zone,
    ended_at timestamp with time zone NOT NULL,
    outcome text NOT NULL,
    failure_reason text,
    error text
)
PARTITION BY RANGE (ended_at);

ALTER TABLE finished_runs
    ADD CONSTRAINT finished_runs_pkey PRIMARY KEY (id, finished_at);

ALTER TABLE job_run_attempts
    ADD CONSTRAINT job_run_attempts_pkey PRIMARY KEY (run_id, attempt, ended_at);

CREATE INDEX finished_runs_job_idx ON ONLY finished_runs USING btree (job_id, finished_at);

CREATE INDEX job_run_attempts_reason_idx ON ONLY job_run_attempts USING btree (failure_reason, ended_at);

-- Logins kept to namespaces (0300, docs/adr/0068-logins-kept-to-namespaces.md).
ALTER TABLE finished_runs ENABLE ROW LEVEL SECURITY;

CREATE POLICY kept_to_namespaces ON finished_runs USING (((( SELECT sundial_login_namespaces() AS sundial_login_namespaces) IS NULL) OR (EXISTS ( SELECT 1
   FROM job_definitions j
  WHERE ((j.id = finished_runs.job_id) AND (j.namespace = ANY (( SELECT sundial_login_namespaces() AS sundial_login_namespaces)::text[])))))));

ALTER TABLE job_run_attempts ENABLE ROW LEVEL SECURITY;

CREATE POLICY kept_to_namespaces ON job_run_attempts USING (((( SELECT sundial_login_namespaces() AS sundial_login_namespaces) IS NULL) OR (EXISTS ( SELECT 1
   FROM job_runs r
  WHERE (r.id = job_run_attempts.run_id))) OR (EXISTS ( SELECT 1
   FROM finished_runs f
  WHERE (f.id = job_run_attempts.run_id)))));

ALTER TABLE idempotency_keys ENABLE ROW LEVEL SECURITY;

CREATE POLICY kept_to_namespaces ON idempotency_keys USING (((( SELECT sundial_login_namespaces() AS sundial_login_namespaces) IS NULL) OR (EXISTS ( SELECT 1
   FROM job_runs r
  WHERE (r.id = idempotency_keys.run_id))) OR (EXISTS ( SELECT 1
   FROM finished_runs f
  WHERE (f.id = idempotency_keys.run_id))))) WITH CHECK (((( SELECT sundial_login_namespaces() AS sundial_login_namespaces) IS NULL) OR ((EXISTS ( SELECT 1
   FROM job_runs r
  WHERE (r.id = idempotency_keys.run_id))) AND (key !~~ 'run-now:%'::text) AND ((strpos(key, '/'::text) = 0) OR (split_part(key, '/'::text, 1) = ANY (( SELECT sundial_login_namespaces() AS sundial_login_namespaces)::text[]))))));
