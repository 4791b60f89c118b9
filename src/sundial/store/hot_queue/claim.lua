-- Claim up to ARGV[3] due runs for one claimer, atomically.
-- ARGV: [1] the epoch the claimer holds, [2] lease (ms), [3] limit,
--       [4] the handler\tmodel pairs it may run, joined by '\n',
--       [5] the namespaces it serves, joined by '\n' ('' : all),
--       [6] namespace\tweight lines (a namespace not named weighs 1),
--       [7] namespace\theld lines: the runs the claimer holds now, per namespace,
--       [8] reserved slots (0: none), [9] namespaces excluded, joined by '\n'.
-- Returns {'EPOCH', epoch or false} when the claimer's epoch is not this server's (it asks
-- PostgreSQL for a new one and sets it), else {'OK', epoch, id1, attempt1, id2, ...}.
--
-- The PostgreSQL claim's fair share, step for step (queries/claim.sql and
-- docs/adr/0049-fair-share-between-namespaces.md): a namespace of weight w offers
-- ceil(limit * w / total) runs from its head in dispatch order, and its k-th run ranks
-- (held + k - u) / w for a random u in (0, 1]; slots go by rank. The last ``reserved`` slots
-- take only runs of a namespace that would still hold no more than the one held most (for
-- their weights). Slots left go to the namespaces that filled their share, in dispatch order.
-- A run of a handler or model the claimer does not register is stepped over (up to four pages
-- of runs per namespace), as the PostgreSQL claim steps over them.
local epoch = current_epoch()
if epoch ~= ARGV[1] then return {'EPOCH', epoch or false} end
local now, lease, limit = now_ms(), tonumber(ARGV[2]), tonumber(ARGV[3])
local reserved = tonumber(ARGV[8])

local function lines(text)
    local found = {}
    for line in string.gmatch(text, '[^\n]+') do table.insert(found, line) end
    return found
end
local function pairs_of(text)  -- 'name\tnumber' lines -> {name = number}
    local found = {}
    for _, line in ipairs(lines(text)) do
        local name, number = string.match(line, '^(.*)\t([^\t]+)$')
        found[name] = tonumber(number)
    end
    return found
end

local allowed = {}
for _, pair in ipairs(lines(ARGV[4])) do allowed[pair] = true end
local served = nil
if ARGV[5] ~= '' then
    served = {}
    for _, namespace in ipairs(lines(ARGV[5])) do served[namespace] = true end
end
local weights, held = pairs_of(ARGV[6]), pairs_of(ARGV[7])
local excluded = {}
for _, namespace in ipairs(lines(ARGV[9])) do excluded[namespace] = true end

local spaces, total = {}, 0
for _, namespace in ipairs(redis.call('SMEMBERS', key('spaces'))) do
    if (not served or served[namespace]) and not excluded[namespace] then
        table.insert(spaces, namespace)
        total = total + (weights[namespace] or 1)
    end
end

local function earlier(a, b)
    if a.score ~= b.score then return a.score < b.score end
    return tonumber(a.id) < tonumber(b.id)
end

-- Each namespace's candidates: its due runs in dispatch order that this claimer may run, at
-- most ``limit`` (no namespace can take more), read a page of ``limit`` at a time; runs of
-- other handlers or models are stepped over for at most four pages.
local candidates = {}
for n, namespace in ipairs(spaces) do
    local mine = {}
    local offset = 0
    for _ = 1, 4 do
        local due = redis.call('ZRANGE', due_key(namespace), '-inf', now, 'BYSCORE', 'LIMIT', offset, limit, 'WITHSCORES')
        for i = 1, #due, 2 do
            local id = due[i]
            local meta = redis.call('HGET', key('meta'), id)
            local _, _, handler, model = string.find(meta or '', '^[^\t]*\t([^\t]*)\t([^\t]*)$')
            if handler and allowed[handler .. '\t' .. model] then
                table.insert(mine, {id = id, score = tonumber(due[i + 1]), namespace = namespace})
                if #mine == limit then break end
            end
        end
        if #mine == limit or #due < 2 * limit then break end
        offset = offset + limit
    end
    -- Runs due at the same key (a batch submitted at once) in the order they were made, as
    -- PostgreSQL's index returns them, not in the sorted set's (lexical) order of members.
    table.sort(mine, earlier)
    candidates[n] = mine
end

-- The share of the namespace the claimer holds most of, for its weight (0: none held).
local most = 0
for namespace, count in pairs(held) do
    most = math.max(most, count / (weights[namespace] or 1))
end

-- Dealt: each namespace's share, ranked round by round, the rounds of the runs held first.
local dealt, filled = {}, {}
for n, namespace in ipairs(spaces) do
    local weight, had = weights[namespace] or 1, held[namespace] or 0
    local share = math.ceil(limit * weight / total)
    for k = 1, math.min(share, #candidates[n]) do
        local run = candidates[n][k]
        run.rank = (had + k - (1 - math.random())) / weight
        run.behind = (had + k) / weight <= most
        run.dealt = true
        table.insert(dealt, run)
    end
    filled[n] = #candidates[n] >= share
end
table.sort(dealt, function(a, b) return a.rank < b.rank end)

local picked, kept = {}, 0
for _, run in ipairs(dealt) do
    if #picked == limit then break end
    if not run.behind then kept = kept + 1 end
    if run.behind or kept <= limit - reserved then table.insert(picked, run) end
end
local not_behind = 0
for _, run in ipairs(picked) do
    if not run.behind then not_behind = not_behind + 1 end
end

-- The slots left, the reserved ones kept, for the namespaces that filled their share.
local room = math.max(0, math.min(limit - #picked, limit - reserved - not_behind))
if room > 0 then
    local rest = {}
    for n = 1, #spaces do
        if filled[n] then
            for _, run in ipairs(candidates[n]) do
                if not run.dealt then table.insert(rest, run) end
            end
        end
    end
    table.sort(rest, earlier)
    for i = 1, math.min(room, #rest) do table.insert(picked, rest[i]) end
end

local claimed = {'OK', epoch}
for _, run in ipairs(picked) do
    redis.call('ZREM', due_key(run.namespace), run.id)
    local attempt = redis.call('HINCRBY', key('attempts'), run.id, 1)
    redis.call('ZADD', key('leases'), now + lease, run.id)
    redis.call('HSET', key('holders'), run.id, epoch .. ':' .. attempt)
    redis.call('HSET', key('started'), run.id, now)  -- for readers: when this attempt began
    table.insert(claimed, run.id)
    table.insert(claimed, attempt)
end
moved(#picked)
for _, namespace in ipairs(spaces) do
    if redis.call('ZCARD', due_key(namespace)) == 0 then redis.call('SREM', key('spaces'), namespace) end
end
return claimed
