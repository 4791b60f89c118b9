-- Who holds the named lease now, by the database clock; no row: nobody (or it expired).
-- Read-only: asking never renews, so only the lease's own keeper decides who leads.
SELECT holder, epoch, expires_at FROM leader_leases
WHERE name = %(name)s AND expires_at > now()
