-- Shared: the live-waiter rule. A place in a line (fair waiters or sleepers) is live until its
-- deadline in waiter-deadlines:{R}; the first live place of a line is found by dropping the
-- lapsed ones ahead of it. acquire, release and leave_line all name or grant through this one
-- function, so none of them can name a waiter whose place has lapsed. A place may come with
-- direct-grant arguments in handoff:{R} (lib/handoff.lua); they go with the place.

-- The first live owner of `line` and its deadline, or nil; lapsed places before it are removed,
-- with their grant arguments in `handoff` (nil: a caller that has no handoff key).
local function first_live(line, deadlines, now_ms, handoff)
    while true do
        local first = redis.call('ZRANGE', line, 0, 0)
        if #first == 0 then return nil end
        -- A deadline that is not a whole number of ms, or further off than any place can be
        -- (MAX_SLOT_MS: 'inf', '1e999', a fraction, a damaged key), counts as lapsed: the place
        -- goes, and the script that called (a release that already deleted its lock) never
        -- fails on it, nor grants a TTL that PEXPIRE refuses, nor waits on a place forever.
        local deadline = tonumber(redis.call('HGET', deadlines, first[1]) or '0') or 0
        if deadline > now_ms and deadline % 1 == 0 and deadline <= now_ms + MAX_SLOT_MS then
            return first[1], deadline
        end
        redis.call('ZREM', line, first[1])
        redis.call('HDEL', deadlines, first[1])
        if handoff then redis.call('HDEL', handoff, first[1]) end
    end
end

-- Reads that fail with WRONGTYPE on a line key of the wrong type (nothing else), called before
-- a script's first write: a corrupt line key must fail the script before it changed anything.
-- `handoff` may be nil.
local function check_line_keys(waiters, deadlines, sleepers, handoff)
    -- Only an existing key can have the wrong type: one call when there is no line at all.
    if redis.call('EXISTS', waiters, deadlines, sleepers, handoff or waiters) == 0 then return end
    redis.call('ZCARD', waiters)
    redis.call('HLEN', deadlines)
    redis.call('ZCARD', sleepers)
    if handoff then redis.call('HLEN', handoff) end
end
