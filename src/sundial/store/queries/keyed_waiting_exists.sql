-- Whether any run of a concurrency key is due and waiting (job_runs_keyed_waiting_idx).
SELECT EXISTS (
    SELECT 1 FROM job_runs
    WHERE state IN ('scheduled', 'retry_wait') AND concurrency_key IS NOT NULL
      AND run_at <= now()
)
