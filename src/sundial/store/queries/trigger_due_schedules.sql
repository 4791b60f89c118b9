-- The trigger's batch: due, live schedules, locked so that a second trigger loop skips them.
-- Ordered by when their runs are due (fire time plus spread), so the earliest fires are
-- placed first; the job's namespace is for the fire budget's per-namespace rate. A stalled schedule (bad cron or zone) waits here until an upsert fixes it.
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
FOR UPDATE OF s SKIP LOCKED
