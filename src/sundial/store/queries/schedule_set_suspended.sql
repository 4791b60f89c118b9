UPDATE schedules SET suspended = %(suspended)s, updated_at = now()
WHERE id = %(id)s
RETURNING id
