-- The trigger's batch: due, live schedules, locked so that a second trigger loop skips them.
-- Ordered by when their runs are due (fire time plus spread), so the earliest fires are
-- placed first; the job's namespace is for the fire budget's per-namespace rate. A stalled
-- schedule (bad cron or zone) waits here until an upsert fixes it.
-- NO KEY UPDATE, not UPDATE: it excludes a second trigger and the operator's upsert as well,
-- and never blocks the KEY SHARE lock that a run inserted meanwhile for this schedule (a
-- run-now) takes for its foreign key. With FOR UPDATE that run waited for the whole pass, and
-- holding its fire key, it could deadlock the pass inserting the same key
-- (tests/integration/trigger/test_trigger_beside_an_upsert.py).
SELECT s.id, s.job_id, s.cron, s.interval_seconds, s.timezone, s.next_fire_time,
       s.spread_seconds, s.concurrency_policy, s.missed_fire_policy, s.max_backfill,
       s.starting_deadline_seconds, s.consecutive_failures, s.failures_counted_after,
       j.quarantine_after, j.namespace, s.dst_skipped_time, s.dst_repeated_time,
       s.buffered_fire_time
FROM schedules s
JOIN job_definitions j ON j.id = s.job_id
WHERE s.next_fire_time <= %(now)s
  AND s.active AND NOT s.suspended AND NOT s.quarantined
  AND s.stalled_reason IS NULL
ORDER BY s.next_fire_time + s.spread_offset_ms * interval '1 millisecond', s.id
LIMIT %(limit)s
FOR NO KEY UPDATE OF s SKIP LOCKED
