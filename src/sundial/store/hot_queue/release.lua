-- The Redis half of fenced finishes: ARGV is (id, 'epoch:attempt') pairs; each run's lease
-- ends only if its holder is that token. Returns 1 per pair then (no reaper takes the run
-- back and no other attempt holds it: the finisher writes PostgreSQL next), 0 for a stale
-- attempt. A run's attempt count stays until ``forget`` (after PostgreSQL recorded the
-- finish), so a run the reconciler must enqueue again gets attempts past this one.
local released = {}
for i = 1, #ARGV, 2 do
    local id, token = ARGV[i], ARGV[i + 1]
    if redis.call('HGET', key('holders'), id) == token and redis.call('ZSCORE', key('leases'), id) then
        redis.call('ZREM', key('leases'), id)
        redis.call('HDEL', key('holders'), id)
        redis.call('HDEL', key('started'), id)
        table.insert(released, 1)
    else
        table.insert(released, 0)
    end
end
return released
