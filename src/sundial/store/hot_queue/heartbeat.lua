-- Extend the leases the claimer still holds. ARGV: [1] lease (ms), [2] "id\tepoch:attempt"
-- lines. Returns 1 or 0 per line: 0 means that attempt lost its run (its lease expired and
-- was taken back, or another attempt holds it): it must stop.
local now, lease = now_ms(), tonumber(ARGV[1])
local held = {}
for line in each_run(ARGV[2]) do
    local id, token = string.match(line, '^([^\t]*)\t([^\t]*)$')
    if redis.call('HGET', key('holders'), id) == token and redis.call('ZSCORE', key('leases'), id) then
        redis.call('ZADD', key('leases'), 'XX', now + lease, id)
        table.insert(held, 1)
    else
        table.insert(held, 0)
    end
end
return held
