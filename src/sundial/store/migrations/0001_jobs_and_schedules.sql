-- Job definitions and their schedules: what the operator upserts from ScheduledJob objects,
-- keyed by the object's uid. Everything the trigger loop, runners and pod launcher need to
-- decide without asking the Kubernetes API lives here.

CREATE TABLE job_definitions (
    id                      uuid PRIMARY KEY,             -- the ScheduledJob's metadata.uid
    namespace               text NOT NULL CHECK (length(namespace) BETWEEN 1 AND 63),
    name                    text NOT NULL CHECK (length(name) BETWEEN 1 AND 253),
    generation              bigint NOT NULL DEFAULT 0,
    handler                 text NOT NULL CHECK (length(handler) BETWEEN 1 AND 253),
    execution_model         text NOT NULL DEFAULT 'async'
        CHECK (execution_model IN ('async', 'thread', 'process', 'subprocess', 'pod')),
    queue                   text NOT NULL DEFAULT 'default' CHECK (length(queue) BETWEEN 1 AND 63),
    priority                smallint NOT NULL DEFAULT 1 CHECK (priority BETWEEN 0 AND 9),
    timeout_seconds         integer NOT NULL DEFAULT 300 CHECK (timeout_seconds > 0),
    max_retries             integer NOT NULL DEFAULT 3 CHECK (max_retries >= 0),
    backoff_base_seconds    double precision NOT NULL DEFAULT 1 CHECK (backoff_base_seconds >= 0),
    backoff_cap_seconds     double precision NOT NULL DEFAULT 300 CHECK (backoff_cap_seconds >= 0),
    dependency              text,                          -- circuit-breaker key
    quarantine_after        integer CHECK (quarantine_after > 0),
    pod_template            jsonb,
    failure_policy          jsonb NOT NULL DEFAULT '[]',
    successful_runs_history_limit integer NOT NULL DEFAULT 3 CHECK (successful_runs_history_limit >= 0),
    failed_runs_history_limit     integer NOT NULL DEFAULT 1 CHECK (failed_runs_history_limit >= 0),
    active                  boolean NOT NULL DEFAULT true,
    created_at              timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now(),
    CHECK ((execution_model = 'pod') = (pod_template IS NOT NULL))
);

-- One-shot submissions name a job by (namespace, name); only one active definition may own it.
CREATE UNIQUE INDEX job_definitions_active_name_idx
    ON job_definitions (namespace, name) WHERE active;

CREATE TABLE schedules (
    id                        uuid PRIMARY KEY,
    job_id                    uuid NOT NULL REFERENCES job_definitions (id) ON DELETE CASCADE,
    cron                      text,
    interval_seconds          integer CHECK (interval_seconds > 0),
    timezone                  text NOT NULL DEFAULT 'UTC',
    next_fire_time            timestamptz NOT NULL,
    spread_seconds            integer NOT NULL DEFAULT 0 CHECK (spread_seconds >= 0),
    concurrency_policy        text NOT NULL DEFAULT 'Forbid'
        CHECK (concurrency_policy IN ('Forbid', 'Allow', 'Replace')),
    missed_fire_policy        text NOT NULL DEFAULT 'Coalesce'
        CHECK (missed_fire_policy IN ('Coalesce', 'Backfill', 'Skip')),
    max_backfill              integer NOT NULL DEFAULT 10 CHECK (max_backfill >= 0),
    starting_deadline_seconds integer CHECK (starting_deadline_seconds > 0),
    suspended                 boolean NOT NULL DEFAULT false,
    quarantined               boolean NOT NULL DEFAULT false,
    consecutive_failures      integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
    active                    boolean NOT NULL DEFAULT true,
    last_fire_time            timestamptz,
    last_successful_time      timestamptz,
    fires_total               bigint NOT NULL DEFAULT 0,
    fires_coalesced           bigint NOT NULL DEFAULT 0,
    fires_skipped             bigint NOT NULL DEFAULT 0,
    fires_backfilled          bigint NOT NULL DEFAULT 0,
    created_at                timestamptz NOT NULL DEFAULT now(),
    updated_at                timestamptz NOT NULL DEFAULT now(),
    CHECK ((cron IS NULL) <> (interval_seconds IS NULL))
);

CREATE INDEX schedules_job_idx ON schedules (job_id);
-- The trigger loop's scan: due, live schedules in fire order.
CREATE INDEX schedules_due_idx ON schedules (next_fire_time)
    WHERE active AND NOT suspended AND NOT quarantined;

-- Leader election for the trigger loop and maintenance. `epoch` grows on every change of
-- holder, so a former leader can fence its writes on the epoch it was granted.
CREATE TABLE leader_leases (
    name        text PRIMARY KEY,
    holder      text NOT NULL,
    epoch       bigint NOT NULL DEFAULT 1,
    acquired_at timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);
