-- Who this server is: its run id and replication id, new after a restart or a promotion.
return server_identity()
