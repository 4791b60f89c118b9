-- Current definition; last changed by migrations/0220_partition_ddl_for_the_maintainer_role.sql.
-- Create the month partitions of both history tables covering `month_start` (idempotent).
-- Runs as its owner: the maintainer's role owns no table (store/roles.py).
CREATE OR REPLACE FUNCTION sundial_ensure_month_partition(month_start timestamptz) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
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
