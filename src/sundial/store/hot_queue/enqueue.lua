-- Make runs due: ARGV[1] holds one line per run, "id\tscore\tnamespace\thandler\tmodel\tattempt";
-- score is the run's dispatch key in ms, attempt the last attempt the record had counted when
-- the run became pending (one argument for the batch: ``each_run`` in common.lua says why).
-- Idempotent by run id (the relay delivers at least once): a run a lease holds is left alone,
-- a due one gets the new score, and a run Redis handed a later attempt since (a late or
-- repeated delivery of a pending the run has already been claimed for) is not made due again.
-- Attempt counts continue from the record's. Returns how many it added.
local added = 0
for line in each_run(ARGV[1]) do
    local id, score, namespace, handler, model, attempt =
        string.match(line, '^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)$')
    attempt = tonumber(attempt)
    local counted = tonumber(redis.call('HGET', key('attempts'), id) or '0')
    if counted <= attempt and not redis.call('ZSCORE', key('leases'), id) then
        if counted < attempt then redis.call('HSET', key('attempts'), id, attempt) end
        added = added + redis.call('ZADD', due_key(namespace), score, id)
        redis.call('HSET', key('meta'), id, namespace .. '\t' .. handler .. '\t' .. model)
        redis.call('HSET', key('dispatch_keys'), id, score)
        redis.call('SADD', key('spaces'), namespace)
    end
end
return added
