-- Runners that died without withdrawing: rows whose announcement expired more than
-- %(older_than_seconds)s ago, at most %(limit)s per statement; their circuits rows cascade.
-- SKIP LOCKED: a runner announcing itself again right now keeps its row.
DELETE FROM runners
WHERE worker_id IN (
    SELECT worker_id FROM runners
    WHERE expires_at < now() - make_interval(secs => %(older_than_seconds)s)
    ORDER BY expires_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
