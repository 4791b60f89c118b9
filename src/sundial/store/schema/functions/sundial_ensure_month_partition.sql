-- Current definition; last changed by migrations/0260_partition_creation_tolerates_a_race.sql.
-- Create the month partitions of both history tables covering `month_start` (idempotent, and
-- safe when several sessions ask at once: a per-month advisory lock serialises them).
-- Runs as its owner: the maintainer's role owns no table (store/roles.py).
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
