-- A failurePolicy rule with action Quarantine: suspend the run's schedule with a message.
UPDATE schedules s
SET quarantined = true,
    quarantine_message = %(message)s,
    updated_at = now()
FROM job_runs r
WHERE r.id = %(id)s AND s.id = r.schedule_id AND NOT s.quarantined
RETURNING s.id
