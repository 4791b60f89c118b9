-- Extend the leases this worker still holds. A run missing from the result was lost: its
-- attempt moved on, the reaper took it, or another worker owns it now.
--
-- Plan: a primary-key probe per id, whatever the table holds. `r.id = ANY(...)` is the index
-- condition; the state is fenced as `(SELECT 'running')`, a parameter, so the planner cannot
-- prove the running index's predicate and read that index whole instead (it did, with
-- statistics taken while few runs were running: 7.3 s per heartbeat with 84,000 running
-- rows). Checked on a million rows by tests/integration/store/test_stable_plans.py
-- (docs/adr/0028-backpressure-and-stable-plans.md).
UPDATE job_runs r
SET lease_until = now() + make_interval(secs => %(lease_seconds)s::double precision)
FROM unnest(%(ids)b::bigint[], %(attempts)b::int[]) AS h(id, attempt)
WHERE r.id = ANY(%(ids)b::bigint[])
  AND r.id = h.id
  AND r.attempt = h.attempt
  AND r.lease_owner = %(worker)s
  AND r.state = (SELECT 'running'::text)
RETURNING r.id, r.cancel_requested, r.lease_until
