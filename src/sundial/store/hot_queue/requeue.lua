-- Give runs back without an end: ARGV[1] holds "id\tepoch:attempt\tdelay ms" lines. Each run
-- whose lease that token still holds leaves the lease set and is due again: without a delay
-- at its dispatch key (its place: PostgreSQL's release leaves the key too), else ``delay`` ms
-- from now (its attempt count stays, so its next claim is a later attempt). Returns 1 per line
-- then, 0 for a stale attempt (the run is not this claimer's to give back).
local now = now_ms()
local requeued = {}
for line in each_run(ARGV[1]) do
    local id, token, delay = string.match(line, '^([^\t]*)\t([^\t]*)\t([^\t]*)$')
    delay = tonumber(delay)
    local namespace = string.match(redis.call('HGET', key('meta'), id) or '', '^([^\t]*)\t')
    if namespace and redis.call('HGET', key('holders'), id) == token and redis.call('ZSCORE', key('leases'), id) then
        redis.call('ZREM', key('leases'), id)
        redis.call('HDEL', key('holders'), id)
        redis.call('HDEL', key('started'), id)
        local at = now + delay
        if delay == 0 then at = tonumber(redis.call('HGET', key('dispatch_keys'), id)) or now end
        redis.call('ZADD', due_key(namespace), at, id)
        redis.call('SADD', key('spaces'), namespace)
        moved(1)
        table.insert(requeued, 1)
    else
        table.insert(requeued, 0)
    end
end
return requeued
