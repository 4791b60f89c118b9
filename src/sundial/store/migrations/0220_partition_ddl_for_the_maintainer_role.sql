-- Database roles per component: the maintainer connects as a role that owns no table, but
-- creating and dropping a history month partition needs the owner of its parent. These two
-- functions run as their owner (the role that migrates) with the search path they were
-- created under, so only they do DDL, and only on the month partitions of the two history
-- tables. Nobody but the owner may call them until `sundial migrate` grants the maintainer's
-- role (store/roles.py).
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
REVOKE EXECUTE ON FUNCTION sundial_ensure_month_partition(timestamptz) FROM PUBLIC;

CREATE FUNCTION sundial_drop_month_partition(partition_name text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF partition_name !~ '^(finished_runs|job_run_attempts)_[0-9]{6}$' THEN
        RAISE EXCEPTION 'not a month partition of the run history: %', partition_name
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT EXISTS (
        SELECT 1
        FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        JOIN pg_class p ON p.oid = i.inhparent
        WHERE c.relname = partition_name
          AND c.relnamespace = current_schema()::regnamespace
          AND p.relname IN ('finished_runs', 'job_run_attempts')
    ) THEN
        RETURN false;
    END IF;
    EXECUTE format('DROP TABLE %I', partition_name);
    RETURN true;
END
$$;
REVOKE EXECUTE ON FUNCTION sundial_drop_month_partition(text) FROM PUBLIC;
