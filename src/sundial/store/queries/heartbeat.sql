-- Extend the leases this worker still holds. A run missing from the result was lost: its
-- attempt moved on, the reaper took it, or another worker owns it now. The statement and its
-- plan notes are in schema/functions/sundial_heartbeat.sql.
SELECT run_id, cancel_requested, lease_until
FROM sundial_heartbeat(%(worker)s, %(ids)b::bigint[], %(attempts)b::int[],
                       %(lease_seconds)s::double precision)
