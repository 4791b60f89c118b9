-- Take back up to ARGV[1] leases that have ended: their holders stopped
-- heartbeating. Returns (id, 'epoch:attempt') pairs; the reaper records each lost attempt in
-- PostgreSQL (fenced by that token), whose retry policy makes the run due again or not.
local expired = redis.call('ZRANGE', key('leases'), '-inf', now_ms(), 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[1]))
local lost = {}
for _, id in ipairs(expired) do
    table.insert(lost, id)
    table.insert(lost, redis.call('HGET', key('holders'), id) or '')
    redis.call('ZREM', key('leases'), id)
    redis.call('HDEL', key('holders'), id)
    redis.call('HDEL', key('started'), id)
end
moved(#expired)
return lost
