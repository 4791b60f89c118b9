-- Schedules the loop cannot compute (an invalid cron or time zone that reached the table
-- without the operator's validation): stop selecting them, and say why.
UPDATE schedules s
SET stalled_reason = u.reason, last_error = u.error, updated_at = now()
FROM unnest(%(ids)s::uuid[], %(reasons)s::text[], %(errors)s::text[]) AS u(id, reason, error)
WHERE s.id = u.id
