-- Forget runs whose finish PostgreSQL recorded (ARGV[1]: their ids, one a line): their
-- attempt counts, metadata and dispatch keys. A run still due or leased is kept (a finish
-- under an older token was refused).
local forgotten = 0
for id in each_run(ARGV[1]) do
    local namespace = string.match(redis.call('HGET', key('meta'), id) or '', '^([^\t]*)\t')
    local due = namespace and redis.call('ZSCORE', due_key(namespace), id)
    if not due and not redis.call('ZSCORE', key('leases'), id) then
        forgotten = forgotten + redis.call('HDEL', key('attempts'), id)
        redis.call('HDEL', key('meta'), id)
        redis.call('HDEL', key('dispatch_keys'), id)
    end
end
return forgotten
