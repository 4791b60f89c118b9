-- Current definition; last changed by migrations/0110_failure_detail.sql.
-- Move up to `batch_size` terminal runs finished before now() - `older_than` out of the hot
-- table into their month partitions, with their dependency edges; archived runs keep their
-- Pod columns, OOM budget and failure detail. Returns how many moved. Bounded (0100): it locks
-- its batch first and creates only that batch's months, so a backlog never makes it long.
CREATE OR REPLACE FUNCTION sundial_archive_finished_runs(older_than interval, batch_size integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    picked_ids bigint[];
    month_start timestamptz;
    moved integer;
BEGIN
    SELECT coalesce(array_agg(p.id), '{}') INTO picked_ids
    FROM (
        SELECT id FROM job_runs
        WHERE finished_at IS NOT NULL AND finished_at < now() - older_than
        ORDER BY finished_at
        LIMIT batch_size
        FOR UPDATE SKIP LOCKED
    ) p;
    IF cardinality(picked_ids) = 0 THEN
        RETURN 0;
    END IF;
    FOR month_start IN
        SELECT DISTINCT date_trunc('month', finished_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
        FROM job_runs WHERE id = ANY (picked_ids)
    LOOP
        PERFORM sundial_ensure_month_partition(month_start);
    END LOOP;
    WITH gone AS (
        DELETE FROM job_runs r WHERE r.id = ANY (picked_ids)
        RETURNING r.*
    ), edges AS (
        DELETE FROM job_run_deps d USING gone WHERE d.run_id = gone.id
    )
    INSERT INTO finished_runs (
        id, job_id, schedule_id, fire_time, idempotency_key, queue, handler, execution_model,
        state, priority, run_at, attempt, retries_used, infra_retries_used, lease_expiries,
        lease_owner, args, failure_reason, last_error, created_at, started_at, finished_at,
        pod_name, pod_exit_code, pod_reason, oom_max_retries, oom_retries_used, failure_detail)
    SELECT id, job_id, schedule_id, fire_time, idempotency_key, queue, handler, execution_model,
        state, priority, run_at, attempt, retries_used, infra_retries_used, lease_expiries,
        lease_owner, args, failure_reason, last_error, created_at, started_at, finished_at,
        pod_name, pod_exit_code, pod_reason, oom_max_retries, oom_retries_used, failure_detail
    FROM gone;
    GET DIAGNOSTICS moved = ROW_COUNT;
    RETURN moved;
END
$$;
