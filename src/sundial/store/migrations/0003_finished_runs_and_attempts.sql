-- History: finished runs and ended attempts live in month partitions, so retention is
-- DROP PARTITION instead of a large DELETE, and the hot table holds only live work.

CREATE TABLE finished_runs (
    id                   bigint NOT NULL,
    job_id               uuid NOT NULL,
    schedule_id          uuid,
    fire_time            timestamptz,
    idempotency_key      text,
    queue                text NOT NULL,
    handler              text NOT NULL,
    execution_model      text NOT NULL,
    state                text NOT NULL
        CHECK (state IN ('completed', 'failed', 'timed_out', 'cancelled', 'dead_lettered')),
    priority             smallint NOT NULL,
    run_at               timestamptz NOT NULL,
    attempt              integer NOT NULL,
    retries_used         integer NOT NULL,
    infra_retries_used   integer NOT NULL,
    lease_expiries       integer NOT NULL,
    lease_owner          text,
    args                 jsonb NOT NULL,
    failure_reason       text,
    last_error           text,
    created_at           timestamptz NOT NULL,
    started_at           timestamptz,
    finished_at          timestamptz NOT NULL,
    PRIMARY KEY (id, finished_at)
) PARTITION BY RANGE (finished_at);

CREATE INDEX finished_runs_job_idx ON finished_runs (job_id, finished_at);

-- One row per attempt that did not end its run: a failure that was retried, or a lease that
-- expired. The attempt that ends a run is described by the run row itself, which keeps the
-- common path (claim, succeed) free of an extra insert.
CREATE TABLE job_run_attempts (
    run_id         bigint NOT NULL,
    attempt        integer NOT NULL,
    worker         text,
    started_at     timestamptz,
    ended_at       timestamptz NOT NULL,
    outcome        text NOT NULL,
    failure_reason text,
    error          text,
    PRIMARY KEY (run_id, attempt, ended_at)
) PARTITION BY RANGE (ended_at);

CREATE INDEX job_run_attempts_reason_idx ON job_run_attempts (failure_reason, ended_at);

-- Create the month partitions of both history tables covering `month_start` (idempotent).
CREATE FUNCTION sundial_ensure_month_partition(month_start timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    lower_bound timestamptz := date_trunc('month', month_start AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    upper_bound timestamptz := (date_trunc('month', month_start AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC';
    suffix text := to_char(lower_bound AT TIME ZONE 'UTC', 'YYYYMM');
BEGIN
    EXECUTE format(
        'CREATE TABLE IF NOT EXISTS %I PARTITION OF finished_runs FOR VALUES FROM (%L) TO (%L)',
        'finished_runs_' || suffix, lower_bound, upper_bound);
    EXECUTE format(
        'CREATE TABLE IF NOT EXISTS %I PARTITION OF job_run_attempts FOR VALUES FROM (%L) TO (%L)',
        'job_run_attempts_' || suffix, lower_bound, upper_bound);
END
$$;

-- Move up to `batch_size` terminal runs finished before now() - `older_than` out of the hot
-- table, with their dependency edges. Returns how many moved.
CREATE FUNCTION sundial_archive_finished_runs(older_than interval, batch_size integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    month_start timestamptz;
    moved integer;
BEGIN
    FOR month_start IN
        SELECT DISTINCT date_trunc('month', finished_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
        FROM job_runs WHERE finished_at IS NOT NULL AND finished_at < now() - older_than
    LOOP
        PERFORM sundial_ensure_month_partition(month_start);
    END LOOP;
    WITH picked AS (
        SELECT id FROM job_runs
        WHERE finished_at IS NOT NULL AND finished_at < now() - older_than
        ORDER BY finished_at
        LIMIT batch_size
        FOR UPDATE SKIP LOCKED
    ), gone AS (
        DELETE FROM job_runs r USING picked WHERE r.id = picked.id
        RETURNING r.*
    ), edges AS (
        DELETE FROM job_run_deps d USING gone WHERE d.run_id = gone.id
    )
    INSERT INTO finished_runs (
        id, job_id, schedule_id, fire_time, idempotency_key, queue, handler, execution_model,
        state, priority, run_at, attempt, retries_used, infra_retries_used, lease_expiries,
        lease_owner, args, failure_reason, last_error, created_at, started_at, finished_at)
    SELECT id, job_id, schedule_id, fire_time, idempotency_key, queue, handler, execution_model,
        state, priority, run_at, attempt, retries_used, infra_retries_used, lease_expiries,
        lease_owner, args, failure_reason, last_error, created_at, started_at, finished_at
    FROM gone;
    GET DIAGNOSTICS moved = ROW_COUNT;
    RETURN moved;
END
$$;

-- Retention: drop every month partition that ends on or before `cutoff`. Returns the names.
CREATE FUNCTION sundial_drop_partitions_before(cutoff timestamptz) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
    part record;
BEGIN
    FOR part IN
        SELECT c.relname, p.relname AS parent
        FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        JOIN pg_class p ON p.oid = i.inhparent
        WHERE p.relname IN ('finished_runs', 'job_run_attempts')
          AND c.relname ~ '_[0-9]{6}$'
          AND ((to_date(right(c.relname, 6), 'YYYYMM') + interval '1 month')::timestamp
               AT TIME ZONE 'UTC') <= cutoff
        ORDER BY c.relname
    LOOP
        EXECUTE format('DROP TABLE %I', part.relname);
        RETURN NEXT part.relname;
    END LOOP;
END
$$;

-- Runs that used up their retries, live or archived: visible and replayable.
CREATE VIEW dead_letters AS
    SELECT id, job_id, queue, handler, attempt, failure_reason, last_error, finished_at, false AS archived
    FROM job_runs WHERE state = 'dead_lettered'
    UNION ALL
    SELECT id, job_id, queue, handler, attempt, failure_reason, last_error, finished_at, true AS archived
    FROM finished_runs WHERE state = 'dead_lettered';

-- Every run, live or archived, for `sundial runs` and the status mirror.
CREATE VIEW all_runs AS
    SELECT id, job_id, schedule_id, fire_time, idempotency_key, queue, handler, state, priority,
           run_at, attempt, failure_reason, last_error, created_at, started_at, finished_at
    FROM job_runs
    UNION ALL
    SELECT id, job_id, schedule_id, fire_time, idempotency_key, queue, handler, state, priority,
           run_at, attempt, failure_reason, last_error, created_at, started_at, finished_at
    FROM finished_runs;
