-- Shared by every hot-queue script (prepended to each): the key names of one queue and the
-- epoch check. KEYS[1] is the queue's prefix, "{sundial:<queue>}", the hash tag that keeps a
-- queue's keys in one Redis Cluster slot; every other key is derived from it.
local prefix = KEYS[1]
local function key(name) return prefix .. ':' .. name end
local function due_key(namespace) return prefix .. ':due:' .. namespace end

-- Who this server is for the epoch: its run id (new at every start, so a restart that lost
-- acknowledged writes is never taken for the same server) and its replication id (new when a
-- replica is promoted).
local function server_identity()
    local run_id = string.match(redis.call('INFO', 'server'), 'run_id:(%w+)')
    local master_replid = string.match(redis.call('INFO', 'replication'), 'master_replid:(%w+)')
    return run_id .. '-' .. master_replid
end

-- The epoch this server's hand-outs belong to, or nil when it has none for this server (none
-- set yet, or set for another server: a failover or a restart happened since).
local function current_epoch()
    local stored = redis.call('GET', key('epoch'))
    if not stored then return nil end
    local epoch, id = string.match(stored, '^(%d+):([%w-]+)$')
    if id ~= server_identity() then return nil end
    return epoch
end

-- Counts what readers see change in a queue, a lease begun or ended (``moves``): the status
-- mirror skips a ScheduledJob with unfinished runs while this number and the record's stay.
local function moved(count)
    if count > 0 then redis.call('INCRBY', key('moves'), count) end
end

-- Now in ms by this server's clock: every lease is set and compared by one clock, whichever
-- machine the claimer runs on.
local function now_ms()
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The runs of a batch come as one argument, one run per line, its fields split by tabs (ids,
-- tokens, names and numbers hold neither): packing a separate argument per field was most of
-- what a batch cost the caller's CPU. ``each_run(text)`` iterates over the lines.
local function each_run(text) return string.gmatch(text, '[^\n]+') end
