-- History of attempts that did not succeed (see 0003_finished_runs_and_attempts.sql).
INSERT INTO job_run_attempts (run_id, attempt, worker, started_at, ended_at, outcome,
                              failure_reason, error)
SELECT a.run_id, a.attempt, a.worker, a.started_at, now(), a.outcome, a.failure_reason, a.error
FROM unnest(%(run_ids)s::bigint[], %(attempts)s::int[], %(workers)s::text[],
            %(started_ats)s::timestamptz[], %(outcomes)s::text[], %(failure_reasons)s::text[],
            %(errors)s::text[])
     AS a(run_id, attempt, worker, started_at, outcome, failure_reason, error)
ON CONFLICT DO NOTHING
