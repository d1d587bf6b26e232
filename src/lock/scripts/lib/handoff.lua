-- Shared: serving the next waiter once a lock is free (release, leave_line). Needs lib/args,
-- lib/fence, lib/line and lib/lease. The waiter is named by the live-waiter rule (lib/line.lua):
-- the first live fair waiter, else the longest-waiting live sleeper.
--
-- Direct handoff: a waiter whose refused attempt opted in (acquire.lua ARGV[8]) left its grant
-- arguments in handoff:{R}. Then the lease is written for it here, with the next fence by the
-- one fence rule (next_fence: never backwards, "Fences across failover"), the holder metadata
-- acquire would write, `handed 1` (leave_line gives back only such a lease, and acquire's
-- "already ours" reply says so), and TTL = min(its lease, its place's deadline - now): a
-- grantee that died blocks the lock no longer than its place would have. Its place and
-- arguments go, and the message says so: "grant <owner> <fence> <ttl ms>". Owner tokens hold no spaces,
-- so a client without direct handoff, which wakes the waiter a message names, wakes nobody on
-- it; it is never named in one anyway, having stored no arguments. The message is a hint: the
-- waiter checks it against its own last refused attempt before it trusts it, or confirms with
-- acquire (docs/DESIGN.md, "Direct handoff").
--
-- Every read that could fail (the arguments, the counter, the clock past 2^53 us) happens
-- before the grant's first write and under pcall: if one fails the waiter is only woken, as
-- before direct handoff, and the caller's release still succeeds.

-- The grant arguments `owner` stored: {lease, max_hold, holder, slot}, holder being the
-- '<pid> <host> <label>' text of lib/lease.lua, or nil when absent or not as acquire.lua writes
-- them. Arguments an earlier version's acquire stored, {lease, max_hold, host, pid, label, slot},
-- read the same.
local function grant_args(handoff, owner)
    local packed = redis.call('HGET', handoff, owner)
    if not packed then return nil end
    local ok, a = pcall(cmsgpack.unpack, packed)
    if not ok or type(a) ~= 'table' then return nil end
    if #a == 6 then
        if type(a[3]) ~= 'string' or type(a[4]) ~= 'string' or type(a[5]) ~= 'string' then return nil end
        a = {a[1], a[2], a[4] .. ' ' .. a[3] .. ' ' .. a[5], a[6]}
    end
    local function whole(v, lo, hi) return type(v) == 'number' and v == math.floor(v) and v >= lo and v <= hi end
    if not (#a == 4 and whole(a[1], 1, MAX_LEASE_MS) and whole(a[2], a[1], MAX_HOLD_MS) and whole(a[4], 1, MAX_SLOT_MS)) then
        return nil
    end
    if type(a[3]) ~= 'string' then return nil end
    return a
end

-- k: {lock, fence, waiters, deadlines, sleepers, handoff}, the lock already free (deleted).
local function hand_on(k, channel)
    local now_us, now_ms = server_time_text()
    now_ms = now_ms + 0
    local line = k.waiters
    local next_owner, deadline = first_live(k.waiters, k.deadlines, now_ms, k.handoff)
    if not next_owner then
        line = k.sleepers
        next_owner, deadline = first_live(k.sleepers, k.deadlines, now_ms, k.handoff)
    end
    if not next_owner then
        redis.pcall('SPUBLISH', channel, '')  -- pcall: without channel permission, no wake-up
        return
    end
    local a = grant_args(k.handoff, next_owner)
    local fence
    if a then
        local ok, f = pcall(function() return next_fence(current_fence(k.fence), now_us) end)
        if ok then fence = f end
    end
    if not fence then
        redis.pcall('SPUBLISH', channel, next_owner)
        return
    end
    local ttl_ms = math.min(a[1], deadline - now_ms)  -- >= 1: first_live's deadline is in the future
    -- The message first: a grant its waiter cannot be told of (the caller's ACL user may not
    -- publish) would leave the lock idle until the waiter's timer. Then no grant: the lock stays
    -- free, as without direct handoff. The script is atomic, so the order is not observable.
    local sent = redis.pcall('SPUBLISH', channel, 'grant ' .. next_owner .. ' ' .. fence .. ' ' .. ttl_ms)
    if type(sent) == 'table' and sent.err then return end
    redis.call('SET', k.fence, fence)
    write_lease(k.lock, next_owner, fence, now_ms, a[1], a[2], a[3], '1', ttl_ms, true)
    redis.call('ZREM', line, next_owner)  -- its place; an owner waits in one line only
    redis.call('HDEL', k.deadlines, next_owner)
    redis.call('HDEL', k.handoff, next_owner)
end
