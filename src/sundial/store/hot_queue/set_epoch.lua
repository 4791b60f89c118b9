-- Set the epoch PostgreSQL issued (ARGV[1]) for this server, unless it holds one for its
-- current replication id already (another process set it first: that one stands).
-- Returns the epoch in force.
local epoch = current_epoch()
if epoch then return epoch end
redis.call('SET', key('epoch'), ARGV[1] .. ':' .. server_identity())
return ARGV[1]
