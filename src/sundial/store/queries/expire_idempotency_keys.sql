-- Up to %(batch)s idempotency keys written before now() - %(older)s whose run has left the hot
-- table (archived, or dropped with its month), oldest first (migration 0170's index). A key
-- whose run is still in job_runs stays however old it is: a run waiting for a runAt months
-- ahead, or still running, is found by its key until it is archived.
WITH doomed AS (
    SELECT k.key
    FROM idempotency_keys k
    WHERE k.created_at < now() - %(older)s
      AND NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.id = k.run_id)
    ORDER BY k.created_at
    LIMIT %(batch)s
    FOR UPDATE OF k SKIP LOCKED
)
DELETE FROM idempotency_keys k USING doomed d WHERE k.key = d.key
