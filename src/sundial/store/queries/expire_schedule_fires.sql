-- Up to %(batch)s fire keys written before now() - %(older)s whose run has left the hot table,
-- oldest first (migration 0170's index); as expire_idempotency_keys.sql.
WITH doomed AS (
    SELECT f.schedule_id, f.fire_time
    FROM schedule_fires f
    WHERE f.created_at < now() - %(older)s
      AND NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.id = f.run_id)
    ORDER BY f.created_at
    LIMIT %(batch)s
    FOR UPDATE OF f SKIP LOCKED
)
DELETE FROM schedule_fires f USING doomed d
WHERE f.schedule_id = d.schedule_id AND f.fire_time = d.fire_time
