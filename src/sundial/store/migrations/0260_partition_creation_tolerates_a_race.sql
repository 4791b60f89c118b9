-- Two sessions may create the same month partition at once: the maintainer's start-up
-- `ensure_partitions` beside a finish recording the month's first failed attempt, for example.
-- CREATE TABLE IF NOT EXISTS checks before it locks, so the slower one failed with
-- duplicate_table and took its whole finish down with it. A transaction-scoped advisory lock
-- per month makes the second wait for the first and then find the table; the exception
-- handler covers a creator that does not take the lock (an older definition mid-upgrade).
CREATE OR REPLACE FUNCTION sundial_ensure_month_partition(month_start timestamptz) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    lower_bound timestamptz := date_trunc('month', month_start AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    upper_bound timestamptz := (date_trunc('month', month_start AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC';
    suffix text := to_char(lower_bound AT TIME ZONE 'UTC', 'YYYYMM');
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('sundial_ensure_month_partition'), suffix::integer);
    BEGIN
        EXECUTE format(
            'CREATE TABLE IF NOT EXISTS %I PARTITION OF finished_runs FOR VALUES FROM (%L) TO (%L)',
            'finished_runs_' || suffix, lower_bound, upper_bound);
    EXCEPTION WHEN duplicate_table OR unique_violation THEN
        NULL;
    END;
    BEGIN
        EXECUTE format(
            'CREATE TABLE IF NOT EXISTS %I PARTITION OF job_run_attempts FOR VALUES FROM (%L) TO (%L)',
            'job_run_attempts_' || suffix, lower_bound, upper_bound);
    EXCEPTION WHEN duplicate_table OR unique_violation THEN
        NULL;
    END;
END
$$;
REVOKE EXECUTE ON FUNCTION sundial_ensure_month_partition(timestamptz) FROM PUBLIC;
