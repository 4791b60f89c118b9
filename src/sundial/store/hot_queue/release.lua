-- The Redis half of fenced finishes: ARGV[1] holds "id\tepoch:attempt" lines; each run's
-- lease ends only if its holder is that token. Returns 1 per line then (no reaper takes the
-- run back and no other attempt holds it: the finisher writes PostgreSQL next), 0 for a stale
-- attempt. A run's attempt count stays until ``forget`` (after PostgreSQL recorded the
-- finish), so a run the reconciler must enqueue again gets attempts past this one.
local released = {}
for line in each_run(ARGV[1]) do
    local id, token = string.match(line, '^([^\t]*)\t([^\t]*)$')
    if redis.call('HGET', key('holders'), id) == token and redis.call('ZSCORE', key('leases'), id) then
        redis.call('ZREM', key('leases'), id)
        redis.call('HDEL', key('holders'), id)
        redis.call('HDEL', key('started'), id)
        moved(1)
        table.insert(released, 1)
    else
        table.insert(released, 0)
    end
end
return released
