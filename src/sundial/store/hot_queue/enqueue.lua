-- Make runs due: ARGV is (id, score, namespace, handler, model) five at a time; score is the
-- run's dispatch key in ms. Idempotent by run id (the relay delivers at least once): a run
-- a lease holds is left alone, a due one gets the new score. Returns how many it added.
local added = 0
for i = 1, #ARGV, 5 do
    local id, score, namespace = ARGV[i], ARGV[i + 1], ARGV[i + 2]
    if not redis.call('ZSCORE', key('leases'), id) then
        added = added + redis.call('ZADD', due_key(namespace), score, id)
        redis.call('HSET', key('meta'), id, namespace .. '\t' .. ARGV[i + 3] .. '\t' .. ARGV[i + 4])
        redis.call('SADD', key('spaces'), namespace)
    end
end
return added
