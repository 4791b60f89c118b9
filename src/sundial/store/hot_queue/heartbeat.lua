-- Extend the leases the claimer still holds. ARGV: [1] lease (ms), then
-- (id, 'epoch:attempt') pairs. Returns 1 or 0 per pair: 0 means that attempt lost its run
-- (its lease expired and was taken back, or another attempt holds it): it must stop.
local now, lease = now_ms(), tonumber(ARGV[1])
local held = {}
for i = 2, #ARGV, 2 do
    local id, token = ARGV[i], ARGV[i + 1]
    if redis.call('HGET', key('holders'), id) == token and redis.call('ZSCORE', key('leases'), id) then
        redis.call('ZADD', key('leases'), 'XX', now + lease, id)
        table.insert(held, 1)
    else
        table.insert(held, 0)
    end
end
return held
