-- Take or keep the named lease. The holder keeps its epoch while it renews in time; anyone
-- else gets it only after it expired, with epoch + 1. No row back: someone else holds it.
INSERT INTO leader_leases (name, holder, epoch, acquired_at, expires_at)
VALUES (%(name)s, %(holder)s, 1, now(), now() + make_interval(secs => %(ttl_seconds)s::double precision))
ON CONFLICT (name) DO UPDATE
SET holder = excluded.holder,
    epoch = leader_leases.epoch + CASE
        WHEN leader_leases.holder = excluded.holder AND leader_leases.expires_at > now() THEN 0
        ELSE 1 END,
    acquired_at = CASE
        WHEN leader_leases.holder = excluded.holder AND leader_leases.expires_at > now()
        THEN leader_leases.acquired_at ELSE now() END,
    expires_at = excluded.expires_at
WHERE leader_leases.holder = excluded.holder OR leader_leases.expires_at <= now()
RETURNING epoch, expires_at
