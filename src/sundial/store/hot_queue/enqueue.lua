-- Make runs due: ARGV is (id, score, namespace, handler, model, attempt) six at a time; score
-- is the run's dispatch key in ms, attempt the last attempt the record had counted when the
-- run became pending. Idempotent by run id (the relay delivers at least once): a run a lease
-- holds is left alone, a due one gets the new score, and a run Redis handed a later attempt
-- since (a late or repeated delivery of a pending the run has already been claimed for) is not
-- made due again. Attempt counts continue from the record's. Returns how many it added.
local added = 0
for i = 1, #ARGV, 6 do
    local id, score, namespace, attempt = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 5])
    local counted = tonumber(redis.call('HGET', key('attempts'), id) or '0')
    if counted <= attempt and not redis.call('ZSCORE', key('leases'), id) then
        if counted < attempt then redis.call('HSET', key('attempts'), id, attempt) end
        added = added + redis.call('ZADD', due_key(namespace), score, id)
        redis.call('HSET', key('meta'), id, namespace .. '\t' .. ARGV[i + 3] .. '\t' .. ARGV[i + 4])
        redis.call('HSET', key('dispatch_keys'), id, score)
        redis.call('SADD', key('spaces'), namespace)
    end
end
return added
