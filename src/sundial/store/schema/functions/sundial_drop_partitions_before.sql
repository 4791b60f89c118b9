-- Current definition; last changed by migrations/0003_finished_runs_and_attempts.sql.
-- Retention: drop every month partition that ends on or before `cutoff`. Returns the names.
CREATE OR REPLACE FUNCTION sundial_drop_partitions_before(cutoff timestamptz) RETURNS SETOF text
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
