-- What the status mirror shows of each schedule besides its runs, and the job generation the
-- store holds (the ScheduledJob's observedGeneration).
SELECT s.id, j.generation, s.next_fire_time, s.spread_offset_ms, s.suspended, s.quarantined,
       s.quarantine_message, s.consecutive_failures, j.quarantine_after, s.stalled_reason,
       s.last_error, s.active, s.last_fire_time, s.buffered_fire_time
FROM schedules s
JOIN job_definitions j ON j.id = s.job_id
WHERE s.id = ANY(%(ids)s::uuid[])
