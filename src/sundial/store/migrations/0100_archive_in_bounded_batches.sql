-- The maintainer archives in bounded batches (docs/adr/0019-the-maintainer.md).
--
-- As in 0060, but the month partitions a batch needs are found from the batch itself. The
-- earlier version first ran SELECT DISTINCT over every finished run older than the window, so
-- one call over a backlog of millions read millions of index entries before moving its
-- `batch_size` rows: a long statement exactly when the maintainer is catching up. Now a call
-- reads and locks at most `batch_size` rows (FOR UPDATE SKIP LOCKED, held until the function's
-- transaction ends), creates their months' partitions, then moves them.
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
        pod_name, pod_exit_code, pod_reason, oom_max_retries, oom_retries_used)
    SELECT id, job_id, schedule_id, fire_time, idempotency_key, queue, handler, execution_model,
        state, priority, run_at, attempt, retries_used, infra_retries_used, lease_expiries,
        lease_owner, args, failure_reason, last_error, created_at, started_at, finished_at,
        pod_name, pod_exit_code, pod_reason, oom_max_retries, oom_retries_used
    FROM gone;
    GET DIAGNOSTICS moved = ROW_COUNT;
    RETURN moved;
END
$$;
