-- The Redis half of a fenced finish: the lease of run ARGV[1] ends only if its holder is the
-- token ARGV[2] ('epoch:attempt'). Returns 1 then (no reaper takes the run back and no other
-- attempt holds it: the finisher writes PostgreSQL next), 0 for a stale attempt. The run's
-- attempt count stays until ``forget`` (after PostgreSQL recorded the finish), so a run the
-- reconciler must enqueue again gets attempts past this one.
local id, token = ARGV[1], ARGV[2]
if redis.call('HGET', key('holders'), id) ~= token or not redis.call('ZSCORE', key('leases'), id) then
    return 0
end
redis.call('ZREM', key('leases'), id)
redis.call('HDEL', key('holders'), id)
return 1
