-- Forget runs whose finish PostgreSQL recorded (ARGV: their ids): their attempt counts,
-- metadata and dispatch keys. A run still due or leased is kept (a finish under an older token was refused).
local forgotten = 0
for _, id in ipairs(ARGV) do
    local namespace = string.match(redis.call('HGET', key('meta'), id) or '', '^([^\t]*)\t')
    local due = namespace and redis.call('ZSCORE', due_key(namespace), id)
    if not due and not redis.call('ZSCORE', key('leases'), id) then
        forgotten = forgotten + redis.call('HDEL', key('attempts'), id)
        redis.call('HDEL', key('meta'), id)
        redis.call('HDEL', key('dispatch_keys'), id)
    end
end
return forgotten
