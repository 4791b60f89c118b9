-- Claim up to ARGV[3] due runs for one claimer, atomically.
-- ARGV: [1] the epoch the claimer holds, [2] lease (ms), [3] limit,
--       [4] the handler\tmodel pairs it may run, joined by '\n',
--       [5] the namespaces it serves, joined by '\n' ('' : all).
-- Returns {'EPOCH', epoch or false} when the claimer's epoch is not this server's (it asks
-- PostgreSQL for a new one and sets it), else {'OK', epoch, id1, attempt1, id2, ...}.
--
-- Slots are dealt round-robin over the namespaces with due runs (in random order each claim),
-- each namespace's runs taken from its head in dispatch order, so one flooding namespace
-- cannot hold another's back; slots a namespace cannot fill go to the others. A run of a
-- handler or model the claimer does not register is stepped over (up to four pages of runs per
-- namespace), as the PostgreSQL claim steps over them.
local epoch = current_epoch()
if epoch ~= ARGV[1] then return {'EPOCH', epoch or false} end
local now, lease, limit = now_ms(), tonumber(ARGV[2]), tonumber(ARGV[3])

local allowed = {}
for pair in string.gmatch(ARGV[4], '[^\n]+') do allowed[pair] = true end
local served = nil
if ARGV[5] ~= '' then
    served = {}
    for namespace in string.gmatch(ARGV[5], '[^\n]+') do served[namespace] = true end
end

local spaces = {}
for _, namespace in ipairs(redis.call('SMEMBERS', key('spaces'))) do
    if not served or served[namespace] then table.insert(spaces, namespace) end
end
for i = #spaces, 2, -1 do  -- Fisher-Yates: which namespace goes first is random per claim
    local j = math.random(i)
    spaces[i], spaces[j] = spaces[j], spaces[i]
end

-- Each namespace's candidates: its due runs in dispatch order that this claimer may run, at
-- most ``limit`` (no namespace can take more), read a page of ``limit`` at a time; runs of
-- other handlers or models are stepped over for at most four pages.
local candidates = {}
for n, namespace in ipairs(spaces) do
    local mine = {}
    local offset = 0
    for _ = 1, 4 do
        local due = redis.call('ZRANGE', due_key(namespace), '-inf', now, 'BYSCORE', 'LIMIT', offset, limit)
        for _, id in ipairs(due) do
            local meta = redis.call('HGET', key('meta'), id)
            local _, _, handler, model = string.find(meta or '', '^[^\t]*\t([^\t]*)\t([^\t]*)$')
            if handler and allowed[handler .. '\t' .. model] then
                table.insert(mine, id)
                if #mine == limit then break end
            end
        end
        if #mine == limit or #due < limit then break end
        offset = offset + limit
    end
    candidates[n] = mine
end

local claimed = {'OK', epoch}
local taken, round = 0, 1
while taken < limit do
    local any = false
    for n, namespace in ipairs(spaces) do
        local id = candidates[n][round]
        if id and taken < limit then
            any = true
            taken = taken + 1
            redis.call('ZREM', due_key(namespace), id)
            local attempt = redis.call('HINCRBY', key('attempts'), id, 1)
            redis.call('ZADD', key('leases'), now + lease, id)
            redis.call('HSET', key('holders'), id, epoch .. ':' .. attempt)
            table.insert(claimed, id)
            table.insert(claimed, attempt)
        end
    end
    if not any then break end
    round = round + 1
end
for _, namespace in ipairs(spaces) do
    if redis.call('ZCARD', due_key(namespace)) == 0 then redis.call('SREM', key('spaces'), namespace) end
end
return claimed
