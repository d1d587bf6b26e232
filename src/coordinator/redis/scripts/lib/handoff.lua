-- Shared: serving the next waiter once a lock is free (release, leave_line). Needs lib/args,
-- lib/fence, lib/line and lib/lease. The waiter is named by the live-waiter rule (lib/line.lua):
-- the first live fair waiter, else the longest-waiting live sleeper.
--
-- Direct handoff: a waiter whose refused attempt opted in (acquire.lua ARGV[8]) left its grant
-- arguments in handoff:{R}. Then the lease is written for it here, with the next fence by the
-- one fence rule (next_fence: never backwards, "Fences across failover"), the holder metadata
-- acquire would write, `handed 1` (leave_line gives back only such a lease, and acquire's
-- "already ours" reply says so), and a TTL of min(its lease, its place's deadline - now), so
-- that a grantee that died or gave up cannot block the lock longer than its place would have
-- (docs/DESIGN.md, "Direct handoff"); the grantee renews it to its lease when it takes it:
--   - granted by a release of the waiter's own client (the releaser's client id, ARGV[3] of
--     release.lua, equals the one the waiter stored): that client is told by the release's
--     reply, which it hands to its waiter without a message; a waiter of it that is giving up
--     sends leave_line, which gives such a lease back, and should that fail the lease still
--     ends with the place. The one exception is the waiter the releaser names its successor
--     (ARGV[4]): its client vouches that it waits now, for longer than the release takes, so
--     it gets the whole lease, like a lease it took by its own attempt (whose reply can be lost
--     as this one's can), and extends nothing;
--   - granted by any other release, only to a waiter that hears the release messages (stored
--     `any`), announced by the message "grant <owner> <fence> <ttl ms>" (owner tokens hold no
--     spaces, so a client without direct handoff, which wakes the waiter a message names, wakes
--     nobody on it);
--   - a waiter that only takes grants from its own client is otherwise only woken by name.
-- The message is a hint: the waiter checks it against its own last refused attempt before it
-- trusts it, or confirms with acquire.
--
-- Every read that could fail (the arguments, the counter, the clock past 2^53 us) happens
-- before the grant's first write and under pcall: if one fails the waiter is only woken (it
-- then takes the lock through acquire), and the caller's release still succeeds.

-- The grant arguments `owner` stored: {lease, max_hold, holder, slot, client, any}, holder being
-- the '<pid> <host> <label>' text of lib/lease.lua, client the waiter's client id ('' for none)
-- and any whether a release of another client may grant it; or nil when absent or not as
-- acquire.lua writes them. Arguments an earlier version stored, {lease, max_hold, host, pid,
-- label, slot} (strings at 3 and 4), read as {lease, max_hold, holder, slot, '', true}.
local function grant_args(handoff, owner)
    local packed = redis.call('HGET', handoff, owner)
    if not packed then return nil end
    local ok, a = pcall(cmsgpack.unpack, packed)
    if not ok or type(a) ~= 'table' or #a ~= 6 then return nil end
    if type(a[4]) == 'string' then
        if type(a[3]) ~= 'string' or type(a[5]) ~= 'string' then return nil end
        a = {a[1], a[2], a[4] .. ' ' .. a[3] .. ' ' .. a[5], a[6], '', true}
    end
    local function whole(v, lo, hi) return type(v) == 'number' and v == math.floor(v) and v >= lo and v <= hi end
    if not (whole(a[1], 1, MAX_LEASE_MS) and whole(a[2], a[1], MAX_HOLD_MS) and whole(a[4], 1, MAX_SLOT_MS)) then
        return nil
    end
    if type(a[3]) ~= 'string' or type(a[5]) ~= 'string' or type(a[6]) ~= 'boolean' then return nil end
    return a
end

-- Grants the free lock to `successor` ({owner, lease, max_hold, holder}, checked), a waiter of
-- the releasing client that has no place in Redis's line (see release.lua): the whole lease,
-- `handed 1`, `waiting` as given. Returns {owner, fence, ttl ms}, or nil when the fence cannot
-- be issued (a corrupt or exhausted counter, read under pcall before any write): then nothing
-- is granted and the release still succeeds.
local function grant_successor(k, successor, now_us, now_ms, waiting)
    local ok, fence = pcall(function() return next_fence(current_fence(k.fence), now_us) end)
    if not ok then return nil end
    redis.call('SET', k.fence, fence)
    write_lease(k.lock, successor.owner, fence, now_ms, successor.lease, successor.max_hold, successor.holder,
        waiting, successor.lease, true)
    return {successor.owner, fence, successor.lease}
end

-- k: {lock, fence, waiters, deadlines, sleepers, handoff}, the lock already free (deleted);
-- releaser: the client id of the caller whose release this is, or nil; successor: that
-- client's next waiter, or nil, granted the lock when no live place in Redis's line comes
-- first, and the whole lease when its own place is the first. Returns the grant made to a waiter of the releaser's own client, {owner,
-- fence, ttl ms}, which no message announces: the caller's reply must. Nil otherwise (a grant
-- announced by the message, a wake-up, nobody).
local function hand_on(k, channel, releaser, successor)
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
        if successor then return grant_successor(k, successor, now_us, now_ms, '1') end
        return nil
    end
    local a = grant_args(k.handoff, next_owner)
    local own = a and releaser and a[5] ~= '' and a[5] == releaser
    local fence
    if a and (own or a[6]) then
        local ok, f = pcall(function() return next_fence(current_fence(k.fence), now_us) end)
        if ok then fence = f end
    end
    if not fence then
        redis.pcall('SPUBLISH', channel, next_owner)
        return nil
    end
    -- >= 1: first_live's deadline is in the future. The releaser's own successor is vouched
    -- for: its client knows it waits now and for longer than this release takes, so its grant
    -- is the whole lease, as its own attempt would have been.
    local ttl_ms = math.min(a[1], deadline - now_ms)
    if own and successor and successor.owner == next_owner then ttl_ms = a[1] end
    if not own then
        -- The message first: a grant its waiter cannot be told of (the caller's ACL user may
        -- not publish) would leave the lock idle until the waiter's timer. Then no grant: the
        -- lock stays free, as without direct handoff. The script is atomic, so the order is not
        -- observable.
        local sent = redis.pcall('SPUBLISH', channel, 'grant ' .. next_owner .. ' ' .. fence .. ' ' .. ttl_ms)
        if type(sent) == 'table' and sent.err then return nil end
    end
    redis.call('SET', k.fence, fence)
    write_lease(k.lock, next_owner, fence, now_ms, a[1], a[2], a[3], '1', ttl_ms, true)
    redis.call('ZREM', line, next_owner)  -- its place; an owner waits in one line only
    redis.call('HDEL', k.deadlines, next_owner)
    redis.call('HDEL', k.handoff, next_owner)
    if own then return {next_owner, fence, ttl_ms} end
    return nil
end
