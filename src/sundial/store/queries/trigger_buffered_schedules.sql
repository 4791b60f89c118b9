-- Schedules whose waiting fire (concurrencyPolicy BufferOne) may start now: no run of their
-- job is active. Locked, as the due batch is; a schedule in that batch is read there (the
-- caller leaves out the ids it holds), and one whose job still has an active run is not read
-- at all, so a pass never meets the same waiting fire twice. With no fire waiting, this is one
-- probe of an empty partial index.
SELECT s.id, s.job_id, s.cron, s.interval_seconds, s.timezone, s.next_fire_time,
       s.spread_seconds, s.concurrency_policy, s.missed_fire_policy, s.max_backfill,
       s.starting_deadline_seconds, s.consecutive_failures, s.failures_counted_after,
       j.quarantine_after, j.namespace, s.dst_skipped_time, s.dst_repeated_time,
       s.buffered_fire_time
FROM schedules s
JOIN job_definitions j ON j.id = s.job_id
WHERE s.buffered_fire_time IS NOT NULL
  AND s.id <> ALL(%(taken)s::uuid[])
  AND s.active AND NOT s.suspended AND NOT s.quarantined
  AND s.stalled_reason IS NULL
  AND NOT EXISTS (
      SELECT 1 FROM job_runs r
      WHERE r.job_id = s.job_id
        AND r.state IN ('scheduled', 'blocked', 'pending', 'running', 'retry_wait'))
ORDER BY s.buffered_fire_time, s.id
LIMIT %(limit)s
FOR NO KEY UPDATE OF s SKIP LOCKED
