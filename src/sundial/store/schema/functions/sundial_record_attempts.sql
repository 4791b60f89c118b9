-- Current definition; last changed by migrations/0004_single_round_trip_finish.sql.
-- Record attempts that did not succeed, creating the month's partition the first time.
CREATE OR REPLACE FUNCTION sundial_record_attempts(
    run_ids bigint[], attempts integer[], workers text[], started_ats timestamptz[],
    outcomes text[], failure_reasons text[], errors text[])
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(cardinality(run_ids), 0) = 0 THEN
        RETURN;
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM pg_class
        WHERE relname = 'job_run_attempts_' || to_char(now() AT TIME ZONE 'UTC', 'YYYYMM')
    ) THEN
        PERFORM sundial_ensure_month_partition(now());
    END IF;
    INSERT INTO job_run_attempts (run_id, attempt, worker, started_at, ended_at, outcome,
                                  failure_reason, error)
    SELECT a.run_id, a.attempt, a.worker, a.started_at, now(), a.outcome, a.failure_reason, a.error
    FROM unnest(run_ids, attempts, workers, started_ats, outcomes, failure_reasons, errors)
         AS a(run_id, attempt, worker, started_at, outcome, failure_reason, error)
    ON CONFLICT DO NOTHING;
END
$$;
