-- What readers of this queue see change, as one text: the server's identity (a restart or a
-- promotion may have lost leases) and how many leases began or ended on it (``moved``).
return server_identity() .. ':' .. (redis.call('GET', key('moves')) or '0')
