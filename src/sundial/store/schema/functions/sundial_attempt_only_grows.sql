-- Current definition; last changed by migrations/0002_runs.sql.
-- attempt is the fencing token: it may never go backwards.
CREATE OR REPLACE FUNCTION sundial_attempt_only_grows() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'job_runs.attempt of run % may not decrease (% -> %): it is the fencing token',
        OLD.id, OLD.attempt, NEW.attempt
        USING ERRCODE = 'check_violation';
END
$$;
