-- A number that moves whenever a row the status mirror reads is inserted, updated or deleted
-- (history.changes): the sum of PostgreSQL's cumulative row counters over the tables behind
-- history_schedules.sql and history_window.sql, their month partitions included. A partition
-- dropped takes its counters with it, and pg_stat_reset() zeroes them: both move the number
-- too, which is all a caller compares. NULL when the server does not count (track_counts off).
-- Backends report their counters within about a second of a commit.
SELECT CASE WHEN current_setting('track_counts')::boolean
            THEN coalesce(sum(s.n_tup_ins + s.n_tup_upd + s.n_tup_del), 0)::bigint END
FROM pg_stat_user_tables s
WHERE s.relid IN (
    SELECT c.oid FROM pg_class c
    WHERE c.relnamespace = current_schema()::regnamespace
      AND c.relname = ANY (ARRAY['job_definitions', 'schedules', 'job_runs', 'job_run_deps',
                                 'finished_runs', 'job_run_attempts', 'schedule_fires'])
    UNION ALL
    SELECT i.inhrelid FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent
    WHERE p.relnamespace = current_schema()::regnamespace
      AND p.relname = ANY (ARRAY['finished_runs', 'job_run_attempts'])
)
