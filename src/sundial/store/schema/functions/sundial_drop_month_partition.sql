-- Current definition; last changed by migrations/0220_partition_ddl_for_the_maintainer_role.sql.
-- Retention: drop one month partition of a history table (false when there is none of that
-- name). Runs as its owner: the maintainer's role owns no table (store/roles.py).
CREATE OR REPLACE FUNCTION sundial_drop_month_partition(partition_name text) RETURNS boolean
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
