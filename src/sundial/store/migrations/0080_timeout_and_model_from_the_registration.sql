-- A job's timeout and execution model may be "not set" (NULL): the handler's registration
-- (@sundial.job(timeout_seconds=..., execution_model=...)) decides, else the defaults (300 s,
-- async). Before this migration both columns were NOT NULL with those defaults, so a run always
-- carried 300 and 'async' and the registration never applied.
--
-- Existing rows: a value equal to the old default cannot be told from an explicit one. It is
-- read as "not set", because that is what almost every such row is, and because it changes
-- nothing unless the registration says otherwise. A ScheduledJob that really wrote 300 or async
-- gets its value back at its next reconcile (the operator rewrites job_definitions from the
-- spec). Runs already running keep what they were claimed with.

ALTER TABLE job_definitions
    ALTER COLUMN timeout_seconds DROP NOT NULL,
    ALTER COLUMN timeout_seconds DROP DEFAULT,
    ALTER COLUMN execution_model DROP NOT NULL,
    ALTER COLUMN execution_model DROP DEFAULT;

-- (NULL = 'pod') is NULL, which a CHECK passes: say what is meant.
DO $$
DECLARE
    name text;
BEGIN
    SELECT c.conname INTO name FROM pg_constraint c
    WHERE c.conrelid = 'job_definitions'::regclass AND c.contype = 'c'
      AND pg_get_constraintdef(c.oid) LIKE '%pod_template IS NOT NULL%';
    EXECUTE format('ALTER TABLE job_definitions DROP CONSTRAINT %I', name);
END
$$;
ALTER TABLE job_definitions ADD CONSTRAINT job_definitions_pod_template_check
    CHECK ((execution_model IS NOT DISTINCT FROM 'pod') = (pod_template IS NOT NULL));

UPDATE job_definitions SET timeout_seconds = NULL WHERE timeout_seconds = 300;
UPDATE job_definitions SET execution_model = NULL WHERE execution_model = 'async';

ALTER TABLE job_runs
    ALTER COLUMN timeout_seconds DROP NOT NULL,
    ALTER COLUMN execution_model DROP NOT NULL;

UPDATE job_runs SET timeout_seconds = NULL
WHERE timeout_seconds = 300 AND state IN ('scheduled', 'blocked', 'pending', 'retry_wait');
UPDATE job_runs SET execution_model = NULL
WHERE execution_model = 'async' AND state IN ('scheduled', 'blocked', 'pending', 'retry_wait');

ALTER TABLE finished_runs ALTER COLUMN execution_model DROP NOT NULL;
