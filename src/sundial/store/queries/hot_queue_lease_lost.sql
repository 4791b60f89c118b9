-- Attempts whose lease the hot queue took back (their claimer stopped heartbeating), recorded
-- as what they are: running under their token with a lease that has ended. The reaper
-- (queries/reap_expired_leases.sql) then handles them as any lost lease: back to pending with
-- the lost-lease budget spent, or ended. Fenced as a finish is: a run still pending whose
-- recorded token (hot_epoch, attempt) is older than the lost attempt's. The claimer is not
-- known to Redis: the owner says so.
UPDATE job_runs r
SET state = 'running', attempt = f.attempt, hot_epoch = f.epoch,
    lease_owner = %(owner)s, lease_until = now() - interval '1 millisecond',
    started_at = now()
FROM unnest(%(ids)s::bigint[], %(epochs)s::bigint[], %(attempts)s::int[])
     AS f(id, epoch, attempt)
WHERE r.id = ANY(%(ids)s::bigint[])
  AND r.id = f.id
  AND r.state = 'pending'
  AND f.attempt >= r.attempt
  AND (f.epoch, f.attempt) > (coalesce(r.hot_epoch, 0), r.attempt)
RETURNING r.id
