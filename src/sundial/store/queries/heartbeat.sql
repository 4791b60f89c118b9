-- Extend the leases this worker still holds. A run missing from the result was lost: its
-- attempt moved on, the reaper took it, or another worker owns it now.
UPDATE job_runs r
SET lease_until = now() + make_interval(secs => %(lease_seconds)s::double precision)
FROM unnest(%(ids)b::bigint[], %(attempts)b::int[]) AS h(id, attempt)
WHERE r.id = h.id
  AND r.attempt = h.attempt
  AND r.lease_owner = %(worker)s
  AND r.state = 'running'
RETURNING r.id, r.cancel_requested, r.lease_until
