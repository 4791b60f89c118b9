-- Where Redis has runs being cancelled (ARGV[1]: their ids, one a line), settled in one step
-- so that no claim falls between: a due run is taken out of its due set here ('due': no claim
-- can take it any more, the record may end it), a run a lease holds is left to its attempt
-- ('held': it runs, the record asks its attempt to stop, as a running run's is), and a run
-- Redis has neither due nor held is 'none' (not relayed yet, or ended). Returns one word per
-- id.
local found = {}
for id in each_run(ARGV[1]) do
    local namespace = string.match(redis.call('HGET', key('meta'), id) or '', '^([^\t]*)\t')
    if namespace and redis.call('ZREM', due_key(namespace), id) == 1 then
        if redis.call('ZCARD', due_key(namespace)) == 0 then
            redis.call('SREM', key('spaces'), namespace)
        end
        table.insert(found, 'due')
    elseif redis.call('ZSCORE', key('leases'), id) then
        table.insert(found, 'held')
    else
        table.insert(found, 'none')
    end
end
return found
