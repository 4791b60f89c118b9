-- Lift a quarantine and forget the streak: runs that ended before now never count again.
UPDATE schedules s
SET quarantined = false,
    quarantine_message = NULL,
    consecutive_failures = 0,
    failures_counted_after = greatest(
        s.failures_counted_after,
        coalesce((SELECT max(r.id) FROM job_runs r WHERE r.job_id = s.job_id), 0)),
    updated_at = now()
WHERE s.id = %(id)s
RETURNING id
