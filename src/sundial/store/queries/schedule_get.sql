SELECT s.id, s.job_id, coalesce(s.cron, '@every ' || s.interval_seconds || 's'), s.timezone,
       s.next_fire_time, s.suspended, s.quarantined, s.quarantine_message,
       s.consecutive_failures, s.stalled_reason, s.last_error, s.active, s.last_fire_time,
       s.fires_total, s.fires_coalesced, s.fires_skipped, s.fires_backfilled
FROM schedules s
WHERE s.id = %(id)s
