UPDATE leader_leases SET expires_at = now()
WHERE name = %(name)s AND holder = %(holder)s AND epoch = %(epoch)s AND expires_at > now()
