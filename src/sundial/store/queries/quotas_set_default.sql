-- The rows made from the default follow it.
UPDATE namespace_quotas SET max_active_runs = %(default)s WHERE NOT explicit
