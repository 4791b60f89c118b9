-- Who held the named lease last, expired or not (no row: nobody ever did): a new leader asks
-- before it takes the lease, to take over what its predecessor left running.
SELECT holder FROM leader_leases WHERE name = %(name)s
